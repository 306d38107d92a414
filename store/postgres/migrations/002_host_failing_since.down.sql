ALTER TABLE herald_host DROP COLUMN failing_since;

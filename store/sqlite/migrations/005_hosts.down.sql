ALTER TABLE herald_registration DROP COLUMN host_failures;
DROP TABLE herald_host;

-- When a host's current run of host-level failures began (push.Host
-- FailingSince), unix nanoseconds: store/postgres's 002.
ALTER TABLE herald_host ADD COLUMN failing_since INTEGER;
UPDATE herald_host SET failing_since = last_failure_at WHERE failures > 0;

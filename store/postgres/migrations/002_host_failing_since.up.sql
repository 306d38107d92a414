-- When a host's current run of host-level failures began (push.Host
-- FailingSince): a host goes down only after HostDownAfter failures in a
-- row spanning HostDownSpan, so one path's burst cannot take it down.
ALTER TABLE herald_host ADD COLUMN failing_since timestamptz;
UPDATE herald_host SET failing_since = last_failure_at WHERE failures > 0;

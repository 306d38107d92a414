-- Host health (push.HostStore), shared by every worker of the database: one
-- row per host that ever failed for its host (push.HostOf form). Due holds
-- the registrations of a host that is not up, but for one probe at
-- next_probe_at (unix ns). last_error is a receiver's text, cleaned.
CREATE TABLE herald_host (
    host            TEXT    PRIMARY KEY,
    state           TEXT    NOT NULL CHECK (state IN ('up', 'down', 'unavailable')),
    since           INTEGER NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    probes          INTEGER NOT NULL DEFAULT 0 CHECK (probes >= 0),
    next_probe_at   INTEGER,
    last_error      TEXT    NOT NULL DEFAULT '',
    last_failure_at INTEGER
) STRICT;
-- Due reads the hosts that hold their registrations: few, through this.
CREATE INDEX herald_host_held ON herald_host (host, next_probe_at) WHERE state <> 'up';

-- Consecutive host-level failures of a registration at its cursor: they key
-- its retry backoff (push.HostRetryAt), never its parking.
ALTER TABLE herald_registration ADD COLUMN host_failures INTEGER NOT NULL DEFAULT 0;

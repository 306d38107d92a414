-- Host health (push.HostStore), shared by every worker on the database: one
-- row per host that ever failed for its host (push.HostOf form). Due holds
-- the registrations of a host that is not up, but for one probe at
-- next_probe_at. last_error is a receiver's text, cleaned.
CREATE TABLE herald_host (
    host            text COLLATE "C" PRIMARY KEY,
    state           text    NOT NULL CHECK (state IN ('up', 'down', 'unavailable')),
    since           timestamptz NOT NULL,
    failures        integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    probes          integer NOT NULL DEFAULT 0 CHECK (probes >= 0),
    next_probe_at   timestamptz,
    last_error      text    NOT NULL DEFAULT '',
    last_failure_at timestamptz
);
-- Due reads the troubled hosts on every claim: few, through this.
CREATE INDEX herald_host_troubled ON herald_host (host) WHERE state <> 'up' OR failures > 0;

-- Consecutive host-level failures of a registration at its cursor: they key
-- its retry backoff (push.HostRetryAt), never its parking.
ALTER TABLE herald_registration ADD COLUMN host_failures integer NOT NULL DEFAULT 0 CHECK (host_failures >= 0);

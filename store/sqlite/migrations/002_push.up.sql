-- Registrations, their cursors, leases and evidence; and the per-stream wake
-- marker that keeps idle registrations out of Due (see doc.go, "Idle costs
-- nothing").

-- wake_at: NULL when no unparked registration of the stream lags its head;
-- otherwise no later than the earliest instant (unix ns) at which one of them
-- may be due. Append sets it to the smallest integer (due at any instant).
ALTER TABLE herald_stream ADD COLUMN wake_at INTEGER;
CREATE INDEX herald_stream_wake ON herald_stream (wake_at) WHERE wake_at IS NOT NULL;

CREATE TABLE herald_registration (
    stream          TEXT    NOT NULL REFERENCES herald_stream (stream),
    id              TEXT    NOT NULL,
    namespace       TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    config          BLOB,                        -- projection config (secrets): never logged
    on_rejected     TEXT    NOT NULL DEFAULT '',
    next_seq        INTEGER NOT NULL CHECK (next_seq >= 1), -- the cursor
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,                     -- NULL: due at once
    parked          INTEGER NOT NULL DEFAULT 0 CHECK (parked IN (0, 1)),
    parked_at       INTEGER,
    last_error      TEXT    NOT NULL DEFAULT '',
    lease_owner     TEXT    NOT NULL DEFAULT '',
    lease_until     INTEGER,                     -- NULL: no lease
    PRIMARY KEY (stream, id)
) STRICT;
CREATE INDEX herald_registration_parked ON herald_registration (stream, id) WHERE parked = 1;

-- id orders a registration's evidence by insertion: newest is largest.
CREATE TABLE herald_evidence (
    id           INTEGER PRIMARY KEY,
    stream       TEXT    NOT NULL,
    registration TEXT    NOT NULL,
    at           INTEGER,
    event        TEXT    NOT NULL,
    seq          INTEGER NOT NULL DEFAULT 0,
    record_id    TEXT    NOT NULL DEFAULT '',
    message_id   TEXT    NOT NULL DEFAULT '',
    attempt      INTEGER NOT NULL DEFAULT 0,
    status       INTEGER NOT NULL DEFAULT 0,
    body         TEXT    NOT NULL DEFAULT '',
    location     TEXT    NOT NULL DEFAULT '',
    duration_ns  INTEGER NOT NULL DEFAULT 0,
    error        TEXT    NOT NULL DEFAULT '',
    not_before   INTEGER,
    FOREIGN KEY (stream, registration) REFERENCES herald_registration (stream, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX herald_evidence_registration ON herald_evidence (stream, registration, id);

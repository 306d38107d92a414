-- herald's SQLite schema. Times are unix nanoseconds (INTEGER), UTC.

-- One row per stream. Seqs are assigned under the single write lock from
-- head, so they are gapless and commit-ordered.
CREATE TABLE herald_stream (
    stream     TEXT    NOT NULL PRIMARY KEY,
    head       INTEGER NOT NULL DEFAULT 0 CHECK (head >= 0), -- seq of the newest record, 0 if none
    sealed     INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)), -- the record at head is final
    -- NULL when no unparked registration of the stream lags its head;
    -- otherwise no later than the earliest instant at which one of them may
    -- be due. Append sets it to the smallest integer (due at any instant).
    -- See doc.go, "Idle costs nothing".
    wake_at    INTEGER,
    -- The low-water mark: the oldest seq the stream still retains (head+1
    -- when it retains none). Records below it were pruned (store.Retention).
    oldest_seq INTEGER NOT NULL DEFAULT 1
) STRICT, WITHOUT ROWID;
CREATE INDEX herald_stream_wake ON herald_stream (wake_at) WHERE wake_at IS NOT NULL;

-- A rowid table, not WITHOUT ROWID: payloads up to 1 MiB belong in overflow
-- pages, not in the B-tree that orders the rows.
CREATE TABLE herald_record (
    stream       TEXT    NOT NULL REFERENCES herald_stream (stream),
    seq          INTEGER NOT NULL CHECK (seq >= 1),
    id           TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    final        INTEGER NOT NULL CHECK (final IN (0, 1)),
    appended_at  INTEGER NOT NULL,
    digest       BLOB    NOT NULL, -- journal.Digest of (stream, entry): the idempotency check
    -- The W3C trace context the append carried (journal.Entry.Traceparent
    -- and Tracestate), sent as a child with each delivery; '' for none.
    traceparent  TEXT    NOT NULL DEFAULT '',
    tracestate   TEXT    NOT NULL DEFAULT '',
    UNIQUE (stream, seq)
) STRICT;

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
    -- push.HostOf of url: the unit of the per-host cap and of host health.
    host            TEXT    NOT NULL DEFAULT '',
    -- Consecutive host-level failures at the cursor: they key the retry
    -- backoff (push.HostRetryAt), never parking.
    host_failures   INTEGER NOT NULL DEFAULT 0,
    kinds           TEXT    NOT NULL DEFAULT '[]', -- push.Registration.Kinds: a JSON array of patterns, '[]' for every kind
    "window"        INTEGER NOT NULL DEFAULT 1 CHECK ("window" >= 1), -- push.Registration.Window; 1 is strict order
    -- store.Registration.RetainMax in nanoseconds, 0 for the namespace's
    -- default: how long a record waits for this registration's
    -- acknowledgement before Prune may take it.
    retain_max_ns   INTEGER NOT NULL DEFAULT 0 CHECK (retain_max_ns >= 0),
    -- store.Registration.Subscription: the prefix of the subscription that
    -- materialised it, '' for one registered alone.
    subscription    TEXT    NOT NULL DEFAULT '',
    retry           TEXT    NOT NULL DEFAULT '{}', -- push.Registration.Retry: push.EncodeRetry's JSON, '{}' for the defaults
    failing_since   INTEGER,                     -- the first failure of the current run at next_seq (attempts > 0)
    -- push.Registration.Paused: an operator's stop. A paused row is parked
    -- too, so that every query that skips parked rows skips it.
    paused          INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    rate            TEXT    NOT NULL DEFAULT '', -- store.Registration.Rate as Rate.String writes it ("10/s"), '' for none
    paced_until     INTEGER,                     -- store.Registration.PacedUntil: the next burst no earlier (NULL: none yet)
    PRIMARY KEY (stream, id)
) STRICT;
CREATE INDEX herald_registration_parked ON herald_registration (stream, id) WHERE parked = 1;
CREATE INDEX herald_registration_subscription ON herald_registration (subscription, id) WHERE subscription <> '';

-- store.Subscription: a registration template over a stream prefix (which
-- ends with '/'). Its columns are the registration's destination.
CREATE TABLE herald_subscription (
    prefix          TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    namespace       TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    host            TEXT    NOT NULL,
    config          BLOB,
    on_rejected     TEXT    NOT NULL DEFAULT '',
    kinds           TEXT    NOT NULL DEFAULT '[]',
    "window"        INTEGER NOT NULL DEFAULT 1 CHECK ("window" >= 1),
    retain_max_ns   INTEGER NOT NULL DEFAULT 0 CHECK (retain_max_ns >= 0),
    retry           TEXT    NOT NULL DEFAULT '{}', -- as herald_registration.retry
    from_head       INTEGER NOT NULL DEFAULT 0 CHECK (from_head IN (0, 1)),
    PRIMARY KEY (prefix, id)
) STRICT;

-- A stream's row is created once, in the transaction of its first record
-- (or of a registration on it): the subscriptions whose prefix it is under
-- materialise there, at its first seq. One read of the subscriptions per
-- new stream; nothing per append or per claim. A registration of the same
-- key is left as it is.
CREATE TRIGGER herald_stream_subscriptions AFTER INSERT ON herald_stream
BEGIN
    INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
                                     retain_max_ns, retry, subscription, next_seq)
    SELECT NEW.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
           u.retain_max_ns, u.retry, u.prefix, NEW.oldest_seq
    FROM herald_subscription AS u WHERE substr(NEW.stream, 1, length(u.prefix)) = u.prefix
    ON CONFLICT DO NOTHING;
    -- Due at any instant (dueNow, store.go) if that made it one to serve.
    UPDATE herald_stream SET wake_at = -9223372036854775808
    WHERE stream = NEW.stream AND EXISTS (SELECT 1 FROM herald_registration WHERE stream = NEW.stream);
END;

-- Due picks a woken stream's due registrations from this index alone,
-- cursor by cursor, in claim order within each, never reading a row's
-- config (a private key can be 2 KB: with 10,000 lagging registrations a
-- claim read 18 MB) nor a registration at the head.
CREATE INDEX herald_registration_due
    ON herald_registration (stream, next_seq, namespace, next_attempt_at, id, lease_until, host)
    WHERE parked = 0;
-- Due's recompute of a wake marker (wake.go) finds in one probe each a
-- stream's earliest lease end (only leased rows: what is in flight) and
-- whether a held host has registrations on it, never reading those that
-- wait (issue 37). A cursor's move writes neither.
CREATE INDEX herald_registration_leased ON herald_registration (stream, lease_until) WHERE lease_until IS NOT NULL;
CREATE INDEX herald_registration_host ON herald_registration (host, stream) WHERE parked = 0;

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

-- Pending resends (store.Store.Resend): a record the registration
-- acknowledged, to send again once, out of band, under a lease of its own
-- (DueResends); Resent deletes the row as it stores the evidence.
CREATE TABLE herald_resend (
    stream      TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    asked_at    INTEGER NOT NULL,
    asked_by    TEXT    NOT NULL,
    lease_owner TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER,                     -- NULL: never claimed
    PRIMARY KEY (stream, id, seq),
    FOREIGN KEY (stream, id) REFERENCES herald_registration (stream, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

-- Tokens (store.TokenStore): the SHA-256 of each secret, never the secret.
-- scope is a JSON array of stream prefixes, '[]' for every stream.
CREATE TABLE herald_token (
    id           TEXT    PRIMARY KEY,
    hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
    name         TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('producer', 'reader', 'operator', 'admin')),
    scope        TEXT    NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
) STRICT;

-- Actor keys (store.ActorKeyStore): an actor's signing key held once by its
-- key id; private_key is the PEM sealed under the keyring (store.Sealer,
-- bound to the id), never in clear when one is given. version grows by one
-- at each rotation.
CREATE TABLE herald_actor_key (
    id          TEXT    PRIMARY KEY,
    private_key BLOB    NOT NULL,
    algorithm   TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at  INTEGER NOT NULL,
    rotated_at  INTEGER
) STRICT;

-- Host health (push.HostStore), shared by every worker of the database: one
-- row per host that failed for its host (push.HostOf form), until retention
-- removes it (no registration of the host, no failure for the retention age). Due holds
-- the registrations of a host that is not up, but for one probe at
-- next_probe_at. last_error is a receiver's text, cleaned. signature_scheme
-- is the scheme the host accepted after refusing another (store.HostSchemes),
-- learned at scheme_at ('' and NULL: none).
CREATE TABLE herald_host (
    host            TEXT    PRIMARY KEY,
    state           TEXT    NOT NULL CHECK (state IN ('up', 'down', 'unavailable')),
    since           INTEGER NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    probes          INTEGER NOT NULL DEFAULT 0 CHECK (probes >= 0),
    next_probe_at   INTEGER,
    last_error      TEXT    NOT NULL DEFAULT '',
    last_failure_at INTEGER,
    failing_since   INTEGER, -- push.Host.FailingSince: the current run's first failure
    signature_scheme TEXT   NOT NULL DEFAULT '',
    scheme_at       INTEGER
) STRICT;
-- Due reads the hosts that hold their registrations: few, through this.
CREATE INDEX herald_host_held ON herald_host (host, next_probe_at) WHERE state <> 'up';
-- Each claim reads the troubled hosts (troubled_hosts) through this, as
-- PostgreSQL's does, not every row: an up host keeps one for its scheme.
CREATE INDEX herald_host_troubled ON herald_host (host) WHERE state <> 'up' OR failures > 0;

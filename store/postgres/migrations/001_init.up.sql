-- herald's schema, version 1. Every text column that is ordered or paged on
-- uses COLLATE "C": byte order, as push.CompareKeys and SQLite's BINARY.

-- One row per stream: the head (seq of the newest committed record), the
-- final seq once sealed, and the pending marker. Appends lock this row to
-- assign seqs (the sequence-visibility trap, DESIGN.md "Storage"), so it is
-- updated on every append: fillfactor leaves room for HOT updates.
CREATE TABLE herald_stream (
    stream    text COLLATE "C" PRIMARY KEY,
    head      bigint  NOT NULL DEFAULT 0 CHECK (head >= 0),
    final_seq bigint  CHECK (final_seq IS NULL OR final_seq = head),
    -- pending: some unparked registration of the stream may have a cursor
    -- at or behind the head. Set by every write that can make one lag
    -- (append, register, unpark, rewind, skip), cleared by a sweep that
    -- finds none, under this row's lock. See the package documentation.
    pending   boolean NOT NULL DEFAULT false
) WITH (fillfactor = 50);

-- Due starts from the pending streams only: idle streams cost nothing.
CREATE INDEX herald_stream_pending ON herald_stream (stream) WHERE pending;

CREATE TABLE herald_record (
    stream       text COLLATE "C" NOT NULL,
    seq          bigint  NOT NULL CHECK (seq >= 1),
    id           text COLLATE "C" NOT NULL,
    kind         text    NOT NULL,
    content_type text    NOT NULL,
    payload      bytea   NOT NULL,
    final        boolean NOT NULL,
    -- journal.Digest of the content: detects an id re-appended with other
    -- content without comparing payloads.
    digest       bytea   NOT NULL,
    appended_at  timestamptz NOT NULL,
    PRIMARY KEY (stream, seq),
    CONSTRAINT herald_record_id_key UNIQUE (id)
);

CREATE TABLE herald_registration (
    stream          text COLLATE "C" NOT NULL REFERENCES herald_stream (stream),
    id              text COLLATE "C" NOT NULL,
    namespace       text COLLATE "C" NOT NULL,
    url             text    NOT NULL,
    config          bytea,  -- the JSON object as given, byte for byte (jsonb would reformat it)
    on_rejected     text    NOT NULL DEFAULT '',
    next_seq        bigint  NOT NULL CHECK (next_seq >= 1),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL,
    parked          boolean NOT NULL DEFAULT false,
    parked_at       timestamptz,
    last_error      text    NOT NULL DEFAULT '',
    lease_owner     text    NOT NULL DEFAULT '',
    lease_until     timestamptz,
    PRIMARY KEY (stream, id)
);

-- Due: for each pending stream, the unparked registrations whose cursor is
-- at or behind its head, an index range scan that ends at the head.
CREATE INDEX herald_registration_lagging ON herald_registration (stream, next_seq) WHERE NOT parked;
-- List by namespace, and the parked ones (herald registrations --parked).
CREATE INDEX herald_registration_namespace ON herald_registration (namespace, stream, id);
CREATE INDEX herald_registration_parked ON herald_registration (stream, id) WHERE parked;

CREATE TABLE herald_evidence (
    n            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order: newest is largest
    stream       text COLLATE "C" NOT NULL,
    registration text COLLATE "C" NOT NULL,
    at           timestamptz NOT NULL,
    event        text    NOT NULL,
    seq          bigint  NOT NULL DEFAULT 0,
    record_id    text    NOT NULL DEFAULT '',
    message_id   text    NOT NULL DEFAULT '',
    attempt      integer NOT NULL DEFAULT 0,
    status       integer NOT NULL DEFAULT 0,
    body         bytea   NOT NULL DEFAULT '', -- the first 512 bytes of an answer: not always UTF-8
    location     text    NOT NULL DEFAULT '',
    duration_ns  bigint  NOT NULL DEFAULT 0,
    error        text    NOT NULL DEFAULT '',
    not_before   timestamptz,
    FOREIGN KEY (stream, registration) REFERENCES herald_registration (stream, id) ON DELETE CASCADE
);

CREATE INDEX herald_evidence_registration ON herald_evidence (stream, registration, n);

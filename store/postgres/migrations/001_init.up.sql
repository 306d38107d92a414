-- herald's PostgreSQL schema. Every text column that is ordered or paged on
-- uses COLLATE "C": byte order, as push.CompareKeys and SQLite's BINARY.

-- One row per stream: the head (seq of the newest numbered record), the
-- final seq once sealed, the pending marker and the low-water mark. The
-- sequencer creates it and updates it at every step that numbers its
-- records: fillfactor leaves room for HOT updates.
CREATE TABLE herald_stream (
    stream     text COLLATE "C" PRIMARY KEY,
    head       bigint  NOT NULL DEFAULT 0 CHECK (head >= 0),
    final_seq  bigint  CHECK (final_seq IS NULL OR final_seq = head),
    -- pending: some unparked registration of the stream may have a cursor
    -- at or behind the head. Set by every write that can make one lag
    -- (the sequencer, register, unpark, rewind, skip), cleared by a sweep
    -- that finds none, under this row's lock. See the package documentation.
    pending    boolean NOT NULL DEFAULT false,
    -- The low-water mark: the oldest seq the stream still retains (head + 1
    -- when it retains none). Records below it were pruned (store.Retention).
    -- Not indexed, so that moving it, or the head, stays a HOT update.
    oldest_seq bigint  NOT NULL DEFAULT 1 CHECK (oldest_seq >= 1)
) WITH (fillfactor = 50);

-- Due starts from the pending streams only: idle streams cost nothing.
CREATE INDEX herald_stream_pending ON herald_stream (stream) WHERE pending;
-- The sealed streams. herald_append asks whether its stream has a final_seq;
-- through this index an open stream's answer is an empty range, with no
-- visit to the stream's row (which the sequencer updates at every step).
-- The sequencer's updates stay HOT: final_seq changes once, when a step
-- seals the stream.
CREATE INDEX herald_stream_sealed ON herald_stream (stream) WHERE final_seq IS NOT NULL;

-- The journal's records, as appended: a plain INSERT in the appender's
-- transaction, never updated (the package documentation, "Appending"). The
-- id is the one index entry an ordinary append writes besides the work
-- list's; the sequencer numbers records in herald_seq.
CREATE TABLE herald_record (
    id           text COLLATE "C" PRIMARY KEY,
    stream       text COLLATE "C" NOT NULL,
    kind         text    NOT NULL,
    content_type text    NOT NULL,
    payload      bytea   NOT NULL,
    final        boolean NOT NULL,
    -- journal.Digest of the content: detects an id re-appended with other
    -- content without comparing payloads.
    digest       bytea   NOT NULL,
    appended_at  timestamptz NOT NULL,
    -- The W3C trace context the append carried (journal.Entry.Traceparent
    -- and Tracestate), sent as a child with each delivery; '' for none.
    traceparent  text    NOT NULL DEFAULT '',
    tracestate   text    NOT NULL DEFAULT '',
    -- The appending transaction (top level): the sequencer numbers the
    -- records whose transaction committed between two of its snapshots.
    xid          xid8    NOT NULL DEFAULT pg_current_xact_id(),
    -- Insertion order: a transaction's records are numbered in it (a batch
    -- is inserted in entry order).
    pos          bigint  GENERATED ALWAYS AS IDENTITY (CACHE 32),
    -- A producer inserts here directly (README, "Producers' grants"): what
    -- journal.ValidateEntries refuses that would reach a receiver's headers
    -- or parser is refused here too, as a necessary condition of Go's rules
    -- (never more strict): names without control characters (nor
    -- whitespace in a stream or kind), a type/subtype content type, JSON
    -- where it says JSON. herald_record_reserved keeps herald's own streams
    -- and ids herald's.
    CONSTRAINT herald_record_names CHECK (
        stream !~ '[\x01-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]'
        AND kind !~ '[\x01-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]'
        AND id !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
        AND traceparent !~ '[^ -~]' AND tracestate !~ '[^ -~]'),
    -- journal.ValidateEntries' lengths (UTF-8 bytes), non-empty names and
    -- trace context, which reach receivers' headers and parsers as well.
    CONSTRAINT herald_record_sizes CHECK (
        octet_length(stream) BETWEEN 1 AND 200 AND octet_length(id) BETWEEN 1 AND 1024
        AND octet_length(kind) BETWEEN 1 AND 200 AND octet_length(content_type) <= 200),
    CONSTRAINT herald_record_trace CHECK (
        traceparent = '' AND tracestate = ''
        OR traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' AND traceparent !~ '^00-0{32}-'
           AND traceparent !~ '^00-[0-9a-f]{32}-0{16}-' AND octet_length(tracestate) <= 8223),
    -- An instant Go reads and writes as JSON (years 1 to 9999): a record
    -- whose appended_at is infinity stopped its stream's every read.
    CONSTRAINT herald_record_appended_at CHECK (
        appended_at >= '0001-01-01 00:00:00+00' AND appended_at < '10000-01-01 00:00:00+00'),
    CONSTRAINT herald_record_content_type CHECK (
        split_part(content_type, ';', 1) ~ $re$^[\s\u0085\u00a0]*[!#$%&'*+.^_`{|}~0-9A-Za-z-]+/[!#$%&'*+.^_`{|}~0-9A-Za-z-]+[\s\u0085\u00a0]*$$re$
        AND CASE WHEN split_part(content_type, ';', 1) ~* '(^[\s\u0085\u00a0]*application/json|\+json)[\s\u0085\u00a0]*$'
            THEN convert_from(payload, 'UTF8')::json IS NOT NULL ELSE true END) -- raises unless JSON
);
-- The sequencer's work list: the records of the transactions that committed
-- since its last snapshot.
CREATE INDEX herald_record_xid ON herald_record (xid, pos);
-- An append's seal check: a final record of the stream, numbered or not.
CREATE INDEX herald_record_final ON herald_record (stream) WHERE final;
-- The sealed streams, for a producer's seal check (AppendTx's insert):
-- it sees which streams are sealed, nothing else of the journal.
CREATE VIEW herald_sealed AS SELECT stream FROM herald_record WHERE final;

-- The sequencer's verdict on each record: its seq, or why it was refused (it
-- committed after its stream's final record was numbered, or is a second
-- final record: it is never read nor delivered, and stays for an operator
-- to see). A record without a row here is waiting for the sequencer.
CREATE TABLE herald_seq (
    id      text COLLATE "C" PRIMARY KEY,
    stream  text COLLATE "C" NOT NULL,
    seq     bigint CHECK (seq >= 1),
    refused text,
    CHECK ((seq IS NULL) <> (refused IS NULL))
);
-- Readers: a stream's numbered records by seq.
CREATE UNIQUE INDEX herald_seq_stream_seq ON herald_seq (stream, seq) WHERE seq IS NOT NULL;
-- Refused records, by stream, for operators.
CREATE INDEX herald_seq_refused ON herald_seq (stream) WHERE refused IS NOT NULL;

-- The sequencer's progress, one row. done: every record whose transaction
-- this snapshot sees committed has its row in herald_seq. win: the snapshot
-- whose records a step is numbering in pages, after the record (after_xid,
-- after_pos); NULL between windows.
CREATE TABLE herald_sequencer (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    done      pg_snapshot NOT NULL,
    win       pg_snapshot,
    after_xid xid8,
    after_pos bigint
);
INSERT INTO herald_sequencer (done) VALUES (pg_current_snapshot());

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
    -- push.HostOf of url (the scheme-less "host:port"): the unit of the
    -- per-host cap and of host health.
    host            text COLLATE "C" NOT NULL DEFAULT '',
    -- Consecutive host-level failures at the cursor: they key the retry
    -- backoff (push.HostRetryAt), never parking.
    host_failures   integer NOT NULL DEFAULT 0 CHECK (host_failures >= 0),
    -- The record kinds wanted (push.Registration.Kinds): patterns, empty
    -- for every kind.
    kinds           text[]  NOT NULL DEFAULT '{}',
    -- How many messages may be unacknowledged at once
    -- (push.Registration.Window); 1 is strict order.
    "window"        integer NOT NULL DEFAULT 1 CHECK ("window" >= 1),
    -- store.Registration.RetainMax in nanoseconds, 0 for the namespace's
    -- default: how long a record waits for this registration's
    -- acknowledgement before Prune may take it.
    retain_max_ns   bigint  NOT NULL DEFAULT 0 CHECK (retain_max_ns >= 0),
    -- store.Registration.Subscription: the prefix of the subscription that
    -- materialised it, '' for one registered alone.
    subscription    text COLLATE "C" NOT NULL DEFAULT '',
    -- push.Registration.Retry as push.EncodeRetry writes it; '{}' for the
    -- defaults.
    retry           text    NOT NULL DEFAULT '{}',
    -- The first failure of the current run at next_seq (attempts > 0):
    -- push.RetryPolicy.For counts from it.
    failing_since   timestamptz,
    -- push.Registration.Paused: an operator's stop. A paused row is parked
    -- too, so that every query that skips parked rows skips it.
    paused          boolean NOT NULL DEFAULT false,
    -- store.Registration.Rate as Rate.String writes it ("10/s"), '' for
    -- none; paced_until: the earliest instant its next burst may start
    -- (store.Store.Pace), NULL before the first.
    rate            text    NOT NULL DEFAULT '',
    paced_until     timestamptz,
    PRIMARY KEY (stream, id)
);

-- Due: for each pending stream, the unparked registrations whose cursor is
-- at or behind its head, an index range that ends at the head (the pending
-- markers' checks: one probe). Within a cursor and namespace they come in
-- claim order (next_attempt_at, id), so a claim (sqlPick) finds the
-- cursors by a loose scan and reads each only as far as it takes.
CREATE INDEX herald_registration_claim ON herald_registration (stream, next_seq, namespace, next_attempt_at, id) WHERE NOT parked;
-- List by namespace, and the parked ones (herald registrations --parked).
CREATE INDEX herald_registration_namespace ON herald_registration (namespace, stream, id);
CREATE INDEX herald_registration_parked ON herald_registration (stream, id) WHERE parked;
CREATE INDEX herald_registration_subscription ON herald_registration (subscription, id) WHERE subscription <> '';
-- A held host's registrations, moved as its state changes (store.Host.HeldTo).
CREATE INDEX herald_registration_host ON herald_registration (host) WHERE NOT parked;

-- store.Subscription: a registration template over a stream prefix (which
-- ends with '/'). Its columns are the registration's destination.
CREATE TABLE herald_subscription (
    prefix          text COLLATE "C" NOT NULL,
    id              text COLLATE "C" NOT NULL,
    namespace       text COLLATE "C" NOT NULL,
    url             text    NOT NULL,
    host            text COLLATE "C" NOT NULL,
    config          bytea,
    on_rejected     text    NOT NULL DEFAULT '',
    kinds           text[]  NOT NULL DEFAULT '{}',
    "window"        integer NOT NULL DEFAULT 1 CHECK ("window" >= 1),
    retain_max_ns   bigint  NOT NULL DEFAULT 0 CHECK (retain_max_ns >= 0),
    retry           text    NOT NULL DEFAULT '{}', -- as herald_registration.retry
    from_head       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (prefix, id)
);

-- A stream's row is created once, by the sequencer step that numbers its
-- first record (or a registration on it): the subscriptions whose prefix
-- it is under materialise in that transaction, at its first seq. One read
-- of the subscriptions per new stream; nothing per append or per claim. A
-- registration of the same key is left as it is. Its lock (ROW EXCLUSIVE:
-- triggers do not wait on each other) orders it with Subscribe's (SHARE ROW
-- EXCLUSIVE), which materialises the streams already committed: a stream
-- is either seen by Subscribe or sees the subscription, never neither. A
-- table's lock, not an advisory one: a producer, without a grant on the
-- table, cannot hold it.
CREATE FUNCTION herald_stream_subscriptions() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    LOCK TABLE herald_subscription IN ROW EXCLUSIVE MODE;
    -- A statement of its own, so its snapshot (READ COMMITTED) is taken
    -- after the lock: a Subscribe that held it has committed.
    INSERT INTO herald_registration (stream, id, namespace, url, host, on_rejected, kinds, "window",
                                     retain_max_ns, retry, subscription, next_seq, next_attempt_at)
    SELECT NEW.stream, u.id, u.namespace, u.url, u.host, u.on_rejected, u.kinds, u."window",
           u.retain_max_ns, u.retry, u.prefix, NEW.oldest_seq, '0001-01-01 00:00:00+00'
    FROM herald_subscription u WHERE starts_with(NEW.stream, u.prefix)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER herald_stream_subscriptions AFTER INSERT ON herald_stream
    FOR EACH ROW EXECUTE FUNCTION herald_stream_subscriptions();

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

-- Pending resends (store.Store.Resend): a record the registration
-- acknowledged, to send again once, out of band, under a lease of its own
-- (DueResends); Resent deletes the row as it stores the evidence. Producers
-- get no grant on it.
CREATE TABLE herald_resend (
    stream      text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    seq         bigint  NOT NULL CHECK (seq >= 1),
    asked_at    timestamptz NOT NULL,
    asked_by    text    NOT NULL,
    lease_owner text    NOT NULL DEFAULT '',
    lease_until timestamptz, -- NULL: never claimed
    PRIMARY KEY (stream, id, seq),
    FOREIGN KEY (stream, id) REFERENCES herald_registration (stream, id) ON DELETE CASCADE
);

-- Tokens (store.TokenStore): the SHA-256 of each secret, never the secret.
CREATE TABLE herald_token (
    id           text COLLATE "C" PRIMARY KEY,
    hash         bytea   NOT NULL UNIQUE CHECK (length(hash) = 32),
    name         text    NOT NULL,
    role         text    NOT NULL CHECK (role IN ('producer', 'reader', 'operator', 'admin')),
    scope        text[]  NOT NULL DEFAULT '{}', -- stream prefixes; empty: every stream
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Actor keys (store.ActorKeyStore): an actor's signing key held once by its
-- key id; private_key is the PEM sealed under the keyring (store.Sealer,
-- bound to the id), never in clear when one is given. version grows by one
-- at each rotation.
CREATE TABLE herald_actor_key (
    id          text COLLATE "C" PRIMARY KEY,
    private_key bytea   NOT NULL,
    algorithm   text    NOT NULL,
    fingerprint text    NOT NULL,
    version     bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    rotated_at  timestamptz
);

-- Host health (push.HostStore), shared by every worker on the database: one
-- row per host that failed for its host (push.HostOf form), until retention
-- removes it (no registration of the host, no failure for the retention age). Due holds
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
    last_failure_at timestamptz,
    -- The first failure of the current run (push.Host.FailingSince): a run
    -- of failures the host answered must span HostDownSpan to bring it down.
    failing_since   timestamptz,
    -- The scheme the host accepted after refusing another
    -- (store.HostSchemes), learned at scheme_at ('' and NULL: none).
    signature_scheme text   NOT NULL DEFAULT '',
    scheme_at       timestamptz
);
-- Due reads the troubled hosts on every claim: few, through this.
CREATE INDEX herald_host_troubled ON herald_host (host) WHERE state <> 'up' OR failures > 0;

-- herald_append_rows: the append of AppendTx and herald_append, with
-- journal.ValidateEntries' checks and journal.Digest's digest (the package
-- documentation, "Appending from SQL", has the signatures and the error
-- codes). Byte lengths are of the UTF-8 form. Every PL/pgSQL function runs
-- with search_path pinned to pg_catalog, the schema it was created in, then
-- pg_temp (the DO block at the end); herald_append's overloads have
-- SQL-standard bodies, bound when created. The check functions below give
-- Go's errors; they run only for an entry herald_append_rows' one
-- expression does not pass.

-- herald_check_name raises HA400 unless value is a valid name for field:
-- journal.ValidateStream (spaces false, 200 bytes), ValidateID (spaces
-- true, 1024 bytes), the kind (spaces false, 200 bytes). Control characters
-- are Go's unicode.IsControl (C0, DEL, C1) and U+2028/U+2029; whitespace is
-- unicode.IsSpace.
CREATE FUNCTION herald_check_name(field text, value text, max_bytes int, spaces boolean) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    n int;
    bad text;
    at_byte int;
BEGIN
    IF value IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = field,
            MESSAGE = format('herald_append: invalid %s: is null', field);
    END IF;
    IF value = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = field,
            MESSAGE = format('herald_append: invalid %s: is empty', field);
    END IF;
    n := octet_length(convert_to(value, 'UTF8'));
    IF n > max_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = field,
            MESSAGE = format('herald_append: invalid %s: is longer than %s bytes (%s)', field, max_bytes, n);
    END IF;
    IF spaces THEN
        bad := substring(value FROM $re$[\x01-\x1f\x7f-\x9f\u2028\u2029]$re$);
    ELSE
        bad := substring(value FROM $re$[\x01-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$re$);
    END IF;
    IF bad IS NULL THEN
        RETURN;
    END IF;
    at_byte := octet_length(convert_to(left(value, strpos(value, bad) - 1), 'UTF8'));
    IF bad ~ $re$[\x01-\x1f\x7f-\x9f\u2028\u2029]$re$ THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = field,
            MESSAGE = format('herald_append: invalid %s: has a control character U+%s at byte %s',
                             field, lpad(upper(to_hex(ascii(bad))), 4, '0'), at_byte);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = field,
        MESSAGE = format('herald_append: invalid %s: has whitespace U+%s at byte %s',
                         field, lpad(upper(to_hex(ascii(bad))), 4, '0'), at_byte);
END
$fn$;

-- herald_media_type returns the media type of content_type, lower-cased and
-- without parameters, or raises HA400: Go's mime.ParseMediaType (tokens of
-- RFC 2045, parameters with token or quoted-string values, a trailing ";"
-- allowed, a repeated parameter with another value refused) and herald's
-- rule that it is type/subtype.
CREATE FUNCTION herald_media_type(content_type text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    tok  constant text := $re$^[!#$%&'*+.^_`{|}~0-9A-Za-z-]+$re$;
    ws   constant text := $re$^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$re$;
    wse  constant text := $re$[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$$re$;
    mt   text;
    rest text;
    key  text;
    val  text;
    c    text;
    i    int;
    keys text[] := '{}';
    vals text[] := '{}';
    k    int;
    why  text;
    later text;
BEGIN
    IF content_type ~ ('^[!#$%&''*+.^_`{|}~0-9A-Za-z-]+/[!#$%&''*+.^_`{|}~0-9A-Za-z-]+$') THEN
        RETURN lower(content_type); -- the usual case: no parameters
    END IF;
    mt := split_part(content_type, ';', 1);
    rest := substr(content_type, length(mt) + 1);
    mt := regexp_replace(regexp_replace(lower(mt), ws, ''), wse, '');
    -- checkMediaTypeDisposition
    IF coalesce(substring(mt FROM tok), '') = '' THEN
        why := 'mime: no media type';
    ELSIF mt ~ (tok || '$') THEN
        later := 'want type/subtype'; -- reported once the parameters parse, as Go does
    ELSIF substr(mt, length(substring(mt FROM tok)) + 1, 1) <> '/' THEN
        why := 'mime: expected slash after first token';
    ELSIF substring(split_part(mt, '/', 2) FROM tok) IS NULL THEN
        why := 'mime: expected token after slash';
    ELSIF mt !~ ('^' || substr(tok, 2) || '/' || substr(tok, 2) || '$') THEN
        why := 'mime: unexpected content after media subtype';
    END IF;
    IF why IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'content_type',
            MESSAGE = format('herald_append: invalid content_type: %s is not a media type: %s', to_json(content_type)::text, why);
    END IF;
    -- the parameters: ; key = value, value a token or a quoted-string
    LOOP
        rest := regexp_replace(rest, ws, '');
        EXIT WHEN rest = '';
        key := NULL;
        IF left(rest, 1) = ';' THEN
            c := regexp_replace(substr(rest, 2), ws, '');
            key := lower(substring(c FROM tok));
            IF key IS NOT NULL THEN
                c := regexp_replace(substr(c, length(key) + 1), ws, '');
                IF left(c, 1) <> '=' THEN
                    key := NULL;
                ELSE
                    c := regexp_replace(substr(c, 2), ws, '');
                    IF left(c, 1) = '"' THEN
                        -- Go's consumeValue: a backslash escapes a tspecial,
                        -- CR or LF ends the value unparsed.
                        val := '';
                        i := 2;
                        LOOP
                            IF i > length(c) THEN
                                key := NULL;
                                EXIT;
                            END IF;
                            EXIT WHEN substr(c, i, 1) = '"';
                            IF substr(c, i, 1) IN (E'\r', E'\n') THEN
                                key := NULL;
                                EXIT;
                            END IF;
                            IF substr(c, i, 1) = '\' AND i < length(c) AND strpos('()<>@,;:\"/[]?=', substr(c, i + 1, 1)) > 0 THEN
                                i := i + 1;
                            END IF;
                            val := val || substr(c, i, 1);
                            i := i + 1;
                        END LOOP;
                        c := substr(c, i + 1);
                    ELSE
                        val := substring(c FROM tok);
                        IF val IS NULL THEN
                            key := NULL;
                        ELSE
                            c := substr(c, length(val) + 1);
                        END IF;
                    END IF;
                END IF;
            END IF;
        END IF;
        IF key IS NULL THEN
            EXIT WHEN btrim(regexp_replace(rest, wse, '')) = ';'; -- a trailing ";"
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'content_type',
                MESSAGE = format('herald_append: invalid content_type: %s is not a media type: mime: invalid media parameter', to_json(content_type)::text);
        END IF;
        k := array_position(keys, key);
        IF k IS NOT NULL AND vals[k] <> val THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'content_type',
                MESSAGE = format('herald_append: invalid content_type: %s is not a media type: mime: duplicate parameter name', to_json(content_type)::text);
        END IF;
        keys := keys || key;
        vals := vals || val;
        rest := c;
    END LOOP;
    IF later IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'content_type',
            MESSAGE = format('herald_append: invalid content_type: %s is not a media type: %s', to_json(content_type)::text, later);
    END IF;
    RETURN mt;
END
$fn$;

-- herald_check_reserved raises HA400 if stream or id is reserved. A name
-- that is reserved is first checked as a name (HA400 too), and a reserved
-- id only once the stream passed, so that a doubly bad call gets Go's
-- error; a name that is not reserved costs two prefix tests here, its
-- checks being herald_append_rows'.
CREATE FUNCTION herald_check_reserved(p_stream text, p_id text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
    IF starts_with(p_stream, 'herald/') THEN -- journal.ReservedPrefix
        PERFORM herald_check_name('stream', p_stream, 200, false);
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'stream',
            MESSAGE = format('herald_append: invalid stream: %s is reserved: streams named herald/… are herald''s own (its operational events), and only herald appends to them',
                             to_json(p_stream)::text);
    END IF;
    IF starts_with(p_id, 'herald-event:') THEN -- journal.ReservedIDPrefix
        PERFORM herald_check_name('stream', p_stream, 200, false);
        PERFORM herald_check_name('id', p_id, 1024, true);
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'id',
            MESSAGE = 'herald_append: invalid id: starts with "herald-event:", reserved for herald''s own events';
    END IF;
END
$fn$;

-- herald_go_quote returns what Go's fmt %q gives for journal's clip(s):
-- s cut to its first 64 bytes followed by "…" when longer (a character cut
-- in two leaves its bytes, each quoted \xNN as Go does), in double quotes,
-- with Go's escapes (strconv.Quote): \" \\ \a \b \f \n \r \t \v, \xNN for
-- other C0 controls and DEL, \uNNNN or \UNNNNNNNN for the characters Go
-- does not print. Those are the C1 controls, the spaces other than U+0020,
-- U+2028, U+2029, the format characters, private use and U+FFFE/U+FFFF;
-- code points unassigned in Go's Unicode tables are kept as they are here
-- (the one known difference: such a character in a refused traceparent).
CREATE FUNCTION herald_go_quote(s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    b     bytea := convert_to(s, 'UTF8');
    head  text := s;
    tail  text := '';
    res   text := '"';
    c     text;
    cp    int;
BEGIN
    IF octet_length(b) > 64 THEN
        head := left(s, 64);
        WHILE octet_length(convert_to(head, 'UTF8')) > 64 LOOP
            head := left(head, -1);
        END LOOP;
        FOR k IN octet_length(convert_to(head, 'UTF8')) .. 63 LOOP
            tail := tail || '\x' || lpad(to_hex(get_byte(b, k)), 2, '0');
        END LOOP;
        tail := tail || '…';
    END IF;
    FOR i IN 1 .. length(head) LOOP
        c := substr(head, i, 1);
        cp := ascii(c);
        res := res || CASE
            WHEN c IN ('"', '\') THEN '\' || c
            WHEN cp = 7 THEN '\a'
            WHEN cp = 8 THEN '\b'
            WHEN cp = 12 THEN '\f'
            WHEN cp = 10 THEN '\n'
            WHEN cp = 13 THEN '\r'
            WHEN cp = 9 THEN '\t'
            WHEN cp = 11 THEN '\v'
            WHEN cp < 32 OR cp = 127 THEN '\x' || lpad(to_hex(cp), 2, '0')
            WHEN c ~ $re$[\u0080-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ue000-\uf8ff\ufeff\ufff9-\ufffb\ufffe\uffff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000f0000-\U0010ffff]$re$
                THEN CASE WHEN cp < 65536 THEN '\u' || lpad(to_hex(cp), 4, '0') ELSE '\U' || lpad(to_hex(cp), 8, '0') END
            ELSE c END;
    END LOOP;
    RETURN res || tail || '"';
END
$fn$;

-- herald_check_trace raises HA400 unless traceparent and tracestate are a
-- valid trace context: journal.ValidateTraceparent and ValidateTracestate
-- (NULL is as '', no trace context). Lengths are of the UTF-8 form.
CREATE FUNCTION herald_check_trace(traceparent text, tracestate text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    tp    text := coalesce(traceparent, '');
    ts    text := coalesce(tracestate, '');
    parts text[];
    why   text;
    n     int;
    bad   text;
BEGIN
    IF tp <> '' THEN
        parts := string_to_array(tp, '-');
        IF cardinality(parts) <> 4 OR octet_length(convert_to(tp, 'UTF8')) <> 55 THEN
            why := format('%s is not version-traceid-parentid-flags (00-<32 hex>-<16 hex>-<2 hex>)', herald_go_quote(tp));
        ELSIF parts[1] <> '00' THEN
            why := format('has version %s: only 00 is known', herald_go_quote(parts[1]));
        ELSIF parts[2] !~ '^[0-9a-f]{32}$' THEN
            why := format('trace id %s is not 32 lowercase hex digits', herald_go_quote(parts[2]));
        ELSIF parts[2] ~ '^0+$' THEN
            why := 'trace id is all zeros';
        ELSIF parts[3] !~ '^[0-9a-f]{16}$' THEN
            why := format('parent id %s is not 16 lowercase hex digits', herald_go_quote(parts[3]));
        ELSIF parts[3] ~ '^0+$' THEN
            why := 'parent id is all zeros';
        ELSIF parts[4] !~ '^[0-9a-f]{2}$' THEN
            why := format('flags %s are not 2 lowercase hex digits', herald_go_quote(parts[4]));
        END IF;
        IF why IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'traceparent',
                MESSAGE = 'herald_append: invalid traceparent: ' || why;
        END IF;
    END IF;
    IF ts = '' THEN
        RETURN;
    END IF;
    IF tp = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'tracestate',
            MESSAGE = 'herald_append: invalid tracestate: is set without a traceparent';
    END IF;
    n := octet_length(convert_to(ts, 'UTF8'));
    IF n > 8223 THEN -- journal.MaxTracestateBytes
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'tracestate',
            MESSAGE = format('herald_append: invalid tracestate: is longer than 8223 bytes (%s)', n);
    END IF;
    bad := substring(ts FROM $re$[^\x20-\x7e]$re$);
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'tracestate',
            MESSAGE = format('herald_append: invalid tracestate: has byte 0x%s at %s: only printable ASCII is allowed',
                             lpad(to_hex(get_byte(convert_to(bad, 'UTF8'), 0)), 2, '0'),
                             octet_length(convert_to(left(ts, strpos(ts, bad) - 1), 'UTF8')));
    END IF;
END
$fn$;

-- herald_check_entry raises HA400, with Go's message, at an entry's first
-- problem in journal.ValidateEntries' order, and returns its media type.
-- herald_append_rows calls it only for an entry its one-expression test did
-- not pass (names beyond printable ASCII, parameters, a trace context), and
-- herald_append for a payload its content type says is JSON and is not.
CREATE FUNCTION herald_check_entry(p_stream text, p_id text, p_kind text, ct text, p_payload bytea,
    lim bigint, p_traceparent text, p_tracestate text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    n  bigint;
    mt text;
    j  json;
BEGIN
    PERFORM herald_check_name('stream', p_stream, 200, false);
    PERFORM herald_check_name('id', p_id, 1024, true);
    PERFORM herald_check_name('kind', p_kind, 200, false);
    n := octet_length(convert_to(ct, 'UTF8'));
    IF n > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'content_type',
            MESSAGE = format('herald_append: invalid content_type: is longer than 200 bytes (%s)', n);
    END IF;
    mt := herald_media_type(ct);
    IF p_payload IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'payload',
            MESSAGE = 'herald_append: invalid payload: is null';
    END IF;
    n := octet_length(p_payload);
    IF n > lim THEN
        RAISE EXCEPTION USING ERRCODE = 'HA413', COLUMN = 'payload',
            MESSAGE = format('herald_append: invalid payload: is %s bytes, more than the limit of %s', n, lim);
    END IF;
    IF mt = 'application/json' OR mt LIKE '%+json' THEN
        IF n = 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'payload',
                MESSAGE = format('herald_append: invalid payload: is missing or empty: content type %s requires a JSON value', mt);
        END IF;
        BEGIN
            j := convert_from(p_payload, 'UTF8')::json;
        EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'payload',
                MESSAGE = format('herald_append: invalid payload: is not valid JSON, as content type %s requires', mt);
        END;
    END IF;
    IF p_traceparent <> '' OR p_tracestate <> '' THEN -- NULL or '': none, nothing to check
        PERFORM herald_check_trace(p_traceparent, p_tracestate);
    END IF;
    RETURN mt;
END
$fn$;

-- herald_usual_entry: whether an entry surely passes Go's rules
-- (journal.ValidateEntries, under the default payload limit) and the
-- table's checks, in one expression: printable ASCII names, none reserved,
-- a bare type/subtype, a plain trace context or none. JSON under a JSON
-- type is the caller's to check. false sends an entry to the checks that
-- give Go's errors (herald_check_entry). SQL-standard bodies, inlined into
-- their callers: the rule and the digest are written once for
-- herald_append_rows and herald_append_one.
CREATE FUNCTION herald_usual_entry(p_stream text, p_id text, p_kind text, p_content_type text, p_payload bytea,
    p_traceparent text, p_tracestate text) RETURNS boolean
LANGUAGE sql IMMUTABLE
RETURN (p_stream ~ '^[!-~]+$' AND octet_length(p_stream) <= 200 AND NOT starts_with(p_stream, 'herald/')
    AND p_id ~ '^[ -~]+$' AND octet_length(p_id) <= 1024 AND NOT starts_with(p_id, 'herald-event:')
    AND p_kind ~ '^[!-~]+$' AND octet_length(p_kind) <= 200
    AND octet_length(p_content_type) <= 200
    AND p_content_type ~ $re$^[!#$%&'*+.^_`{|}~0-9A-Za-z-]+/[!#$%&'*+.^_`{|}~0-9A-Za-z-]+$$re$
    AND octet_length(p_payload) <= 1048576
    AND (p_traceparent = '' AND p_tracestate = ''
        OR p_traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' AND p_traceparent !~ '^00-0{32}-'
           AND p_traceparent !~ '^00-[0-9a-f]{32}-0{16}-'
           AND p_tracestate ~ '^[ -~]*$' AND octet_length(p_tracestate) <= 8223)) IS TRUE;

-- herald_digest is journal.Digest: each field length-prefixed (8 bytes,
-- big-endian), SHA-256.
CREATE FUNCTION herald_digest(p_stream text, p_kind text, p_content_type text, p_payload bytea, p_final boolean)
RETURNS bytea
LANGUAGE sql STABLE
RETURN sha256(int8send(octet_length(convert_to(p_stream, 'UTF8'))::bigint) || convert_to(p_stream, 'UTF8')
    || int8send(octet_length(convert_to(p_kind, 'UTF8'))::bigint) || convert_to(p_kind, 'UTF8')
    || int8send(octet_length(convert_to(p_content_type, 'UTF8'))::bigint) || convert_to(p_content_type, 'UTF8')
    || int8send(octet_length(p_payload)::bigint) || p_payload
    || int8send(1::bigint) || CASE WHEN p_final THEN '\x01'::bytea ELSE '\x00'::bytea END);

-- herald_append_rows is the one append: AppendTx's (which validated in Go
-- first) and herald_append's. It runs as the schema's owner (SECURITY
-- DEFINER), so that a producer needs EXECUTE on it and nothing on the
-- tables (README, "Producers' grants"): it checks every entry as
-- journal.ValidateEntries does, computes journal.Digest itself, and writes
-- no column the caller names but the entry's (xid and pos are the
-- table's). A reserved stream or id passes only when the session's user is
-- a member of the owner: herald itself, appending its events.
--
-- It decides the append without raising: o_verdict 'ok' (o_seqs, o_ats,
-- o_parents, o_states: the records' seqs, appended-at and trace context,
-- NULL when every entry is new), 'conflict' (the stored record of o_id:
-- o_stream, o_seq, the first field that differs o_field), 'sealed'
-- (o_final_seq, 0 while the final record waits for its seq), 'raced' (a
-- concurrent append took an id of a batch). Nothing of the batch stays
-- unless 'ok'.
CREATE FUNCTION herald_append_rows(p_stream text, p_ids text[], p_kinds text[], p_types text[], p_payloads bytea[],
    p_finals boolean[], p_parents text[], p_states text[], p_at timestamptz,
    OUT o_verdict text, OUT o_seqs bigint[], OUT o_ats timestamptz[], OUT o_parents text[], OUT o_states text[],
    OUT o_id text, OUT o_stream text, OUT o_seq bigint, OUT o_field text, OUT o_final_seq bigint)
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
DECLARE
    -- No initialiser but the usual append's: each costs every transaction.
    n       int;
    setting text := current_setting('herald.max_payload', true);
    lim     bigint;
    v_at    timestamptz := coalesce(p_at, clock_timestamp());
    types   text[];
    digests bytea[];
    parents text[];
    states  text[];
    ct      text;
    mt      text;
    j       json;
    want    int[];
    got     text[];
    blocked boolean;
    prev    record;
BEGIN
    -- The usual append, one statement: one entry whose every field passes a
    -- one-expression test (printable ASCII names, not reserved, a bare
    -- type/subtype, a JSON payload where that says JSON, a plain trace
    -- context or none), inserted unless the stream is sealed or the id
    -- stored. Anything else, and any problem, takes the path below, which
    -- checks each entry with Go's errors and decides.
    IF cardinality(p_ids) = 1 AND coalesce(setting, '') = '' THEN
        INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
        SELECT p_stream, p_ids[1], p_kinds[1], e.ct, p_payloads[1], p_finals[1],
            herald_digest(p_stream, p_kinds[1], e.ct, p_payloads[1], p_finals[1]), v_at, e.tp, e.ts
        FROM (SELECT coalesce(nullif(p_types[1], ''), 'application/json') AS ct,
                     coalesce(p_parents[1], '') AS tp, coalesce(p_states[1], '') AS ts) e
        WHERE herald_usual_entry(p_stream, p_ids[1], p_kinds[1], e.ct, p_payloads[1], e.tp, e.ts)
          AND p_finals[1] IS NOT NULL
          AND CASE WHEN lower(e.ct) = 'application/json' OR lower(e.ct) LIKE '%+json'
              THEN convert_from(p_payloads[1], 'UTF8')::json IS NOT NULL ELSE true END -- raises unless JSON
          AND NOT EXISTS (SELECT FROM herald_record r WHERE r.stream = p_stream AND r.final)
        ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
            o_verdict := 'ok';
            RETURN;
        END IF;
    END IF;
    n := coalesce(cardinality(p_ids), 0);
    setting := nullif(setting, '');
    lim := 1048576; -- journal.DefaultMaxPayload
    types := '{}';
    digests := '{}';
    parents := '{}';
    states := '{}';
    IF n = 0 OR n > 10000 THEN -- journal.MaxBatch
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'entries',
            MESSAGE = format('herald_append: invalid entries: has %s entries: from 1 to 10000', n);
    END IF;
    IF cardinality(p_kinds) IS DISTINCT FROM n OR cardinality(p_types) IS DISTINCT FROM n
       OR cardinality(p_payloads) IS DISTINCT FROM n OR cardinality(p_finals) IS DISTINCT FROM n
       OR cardinality(p_parents) IS DISTINCT FROM n OR cardinality(p_states) IS DISTINCT FROM n THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'entries',
            MESSAGE = 'herald_append: invalid entries: the arrays are not all of one length';
    END IF;
    IF setting IS NOT NULL THEN
        IF setting !~ '^[0-9]{1,18}$' OR setting::bigint < 1 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('herald_append: the setting herald.max_payload is %s: it must be a number of bytes, at least 1', to_json(setting)::text);
        END IF;
        lim := setting::bigint;
    END IF;
    IF (p_stream ~ '^[!-~]+$' AND octet_length(p_stream) <= 200) IS NOT TRUE THEN
        PERFORM herald_check_name('stream', p_stream, 200, false);
    END IF;
    IF starts_with(p_stream, 'herald/') AND NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
        PERFORM herald_check_reserved(p_stream, p_ids[1]);
    END IF;
    FOR i IN 1 .. n LOOP
        ct := coalesce(nullif(p_types[i], ''), 'application/json'); -- journal.DefaultContentType
        -- The usual entry, in one expression: printable ASCII names, a
        -- bare type/subtype, no trace context. Anything else, and any
        -- problem, is herald_check_entry's, which raises Go's error.
        IF (p_ids[i] ~ '^[ -~]+$' AND octet_length(p_ids[i]) <= 1024
            AND p_kinds[i] ~ '^[!-~]+$' AND octet_length(p_kinds[i]) <= 200
            AND octet_length(ct) <= 200 AND ct ~ $re$^[!#$%&'*+.^_`{|}~0-9A-Za-z-]+/[!#$%&'*+.^_`{|}~0-9A-Za-z-]+$$re$
            AND octet_length(p_payloads[i]) <= lim
            AND coalesce(p_parents[i], '') = '' AND coalesce(p_states[i], '') = '') IS TRUE THEN
            mt := lower(ct);
        ELSE
            mt := herald_check_entry(p_stream, p_ids[i], p_kinds[i], ct, p_payloads[i], lim, p_parents[i], p_states[i]);
        END IF;
        IF starts_with(p_ids[i], 'herald-event:') AND NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
            PERFORM herald_check_reserved(p_stream, p_ids[i]);
        END IF;
        IF mt = 'application/json' OR mt LIKE '%+json' THEN
            -- Raises unless JSON. herald_append and Go checked first, with
            -- their own errors: this one is for a hand-made call.
            j := convert_from(p_payloads[i], 'UTF8')::json;
        END IF;
        IF p_finals[i] AND i < n THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'final',
                MESSAGE = format('herald_append: invalid entries[%s].final: is set but %s entries follow: only the last entry of a batch may be final', i, n - i);
        END IF;
        types[i] := ct;
        parents[i] := coalesce(p_parents[i], '');
        states[i] := coalesce(p_states[i], '');
        digests[i] := herald_digest(p_stream, p_kinds[i], ct, p_payloads[i], p_finals[i]);
    END LOOP;
    IF n > 1 AND (SELECT count(DISTINCT x) FROM unnest(p_ids) x) < n THEN
        RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'id',
            MESSAGE = 'herald_append: invalid entries: an id repeats in the same batch';
    END IF;

    o_verdict := 'ok';
    want := ARRAY(SELECT generate_series(1, n));
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            -- Blocked by a final record or a stored id: nothing goes in. ON
            -- CONFLICT skips an id another transaction committed since the
            -- statement's snapshot: then fewer ids come back.
            WITH seal AS MATERIALIZED (
                SELECT EXISTS (SELECT 1 FROM herald_record r WHERE r.stream = p_stream AND r.final)
                    OR EXISTS (SELECT 1 FROM herald_record r WHERE r.id = ANY (ARRAY(SELECT p_ids[k] FROM unnest(want) k))) AS blocked
            ), ins AS (
                INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
                SELECT p_stream, u.id, u.kind, u.ct, u.payload, u.final, u.digest, v_at, u.tp, u.ts
                FROM unnest(p_ids, p_kinds, types, p_payloads, p_finals, digests, parents, states)
                     WITH ORDINALITY AS u (id, kind, ct, payload, final, digest, tp, ts, ord)
                WHERE NOT (SELECT s.blocked FROM seal s) AND u.ord = ANY (want)
                ORDER BY u.ord
                ON CONFLICT (id) DO NOTHING
                RETURNING herald_record.id
            )
            SELECT ARRAY(SELECT x.id FROM ins x), (SELECT s.blocked FROM seal s) INTO got, blocked;
            IF NOT blocked AND cardinality(got) = cardinality(want) THEN
                RETURN;
            END IF;
            DELETE FROM herald_record r WHERE r.id = ANY (got); -- all or nothing
        END;
        -- Decide as Go's journal does: a stored id with other content is a
        -- conflict, one refused by the sequencer a seal, the same entry
        -- again its record; the new ones go in unless the stream is sealed.
        o_final_seq := (SELECT s.final_seq FROM herald_stream s WHERE s.stream = p_stream);
        want := '{}';
        o_seqs := array_fill(0::bigint, ARRAY[n]);
        o_ats := array_fill(v_at, ARRAY[n]);
        o_parents := parents;
        o_states := states;
        FOR i IN 1 .. n LOOP
            SELECT r.stream, coalesce(q.seq, 0) AS seq, r.kind, r.content_type, r.payload, r.final, r.digest,
                   r.appended_at, r.traceparent, r.tracestate, q.refused IS NOT NULL AS refused
            INTO prev FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = p_ids[i];
            IF NOT FOUND THEN
                want := want || i;
                CONTINUE;
            END IF;
            IF prev.stream <> p_stream OR prev.digest <> digests[i] THEN
                o_verdict := 'conflict';
                o_id := p_ids[i];
                o_stream := prev.stream;
                o_seq := prev.seq;
                o_field := CASE -- journal.Same's order and words
                    WHEN prev.stream <> p_stream THEN 'stream'
                    WHEN prev.kind <> p_kinds[i] THEN 'kind'
                    WHEN prev.content_type <> types[i] THEN 'content type'
                    WHEN prev.final <> p_finals[i] AND prev.payload = p_payloads[i] THEN 'final flag'
                    ELSE 'payload' END;
                RETURN;
            END IF;
            IF prev.refused THEN
                o_verdict := 'sealed';
                o_final_seq := coalesce(o_final_seq, 0);
                RETURN;
            END IF;
            o_seqs[i] := prev.seq;
            o_ats[i] := prev.appended_at;
            o_parents[i] := prev.traceparent;
            o_states[i] := prev.tracestate;
        END LOOP;
        IF cardinality(want) = 0 THEN
            RETURN;
        END IF;
        IF o_final_seq IS NOT NULL OR EXISTS (SELECT 1 FROM herald_record r WHERE r.stream = p_stream AND r.final) THEN
            o_verdict := 'sealed';
            o_final_seq := coalesce(o_final_seq, 0);
            RETURN;
        END IF;
        -- Blocked by a row gone since (pruned, or rolled back), or raced:
        -- the new ones once more.
    END LOOP;
    o_verdict := 'raced';
END
$fn$;
REVOKE EXECUTE ON FUNCTION herald_append_rows(text, text[], text[], text[], bytea[], boolean[], text[], text[], timestamptz) FROM PUBLIC;

-- herald_append_one is herald_append for one payload's bytes; payload_is_json:
-- its SQL type (json, jsonb) makes it JSON. The usual entry takes
-- AppendTx's one statement (sql/journal.sql, insert_record): a plain
-- insert as the caller, under the producer's grants, fenced by the table's
-- checks and trigger, taken only when herald_usual_entry says Go would
-- accept the entry. Anything else, and an insert that stored nothing (a
-- sealed stream, a stored id), goes to herald_append_rows, which checks
-- with Go's errors and decides; this raises what it decides.
CREATE FUNCTION herald_append_one(p_stream text, p_id text, p_kind text, p_payload bytea,
    p_content_type text, p_final boolean, payload_is_json boolean,
    p_traceparent text, p_tracestate text) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    ct  text := coalesce(nullif(p_content_type, ''), 'application/json');
    mt  text := lower(btrim(split_part(ct, ';', 1)));
    j   json;
    res record;
BEGIN
    IF starts_with(p_stream, 'herald/') OR starts_with(p_id, 'herald-event:') THEN
        PERFORM herald_check_reserved(p_stream, p_id);
    END IF;
    IF NOT payload_is_json AND (mt = 'application/json' OR mt LIKE '%+json') THEN
        BEGIN
            j := convert_from(p_payload, 'UTF8')::json;
        EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            -- Go's error: the first problem of the entry, this one or one before it.
            PERFORM herald_check_entry(p_stream, p_id, p_kind, ct, p_payload,
                coalesce(nullif(current_setting('herald.max_payload', true), ''), '1048576')::bigint, '', '');
        END;
    END IF;
    IF herald_usual_entry(p_stream, p_id, p_kind, ct, p_payload, coalesce(p_traceparent, ''), coalesce(p_tracestate, ''))
       AND coalesce(current_setting('herald.max_payload', true), '') = '' THEN
        INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
        SELECT p_stream, p_id, p_kind, ct, p_payload, coalesce(p_final, false),
            herald_digest(p_stream, p_kind, ct, p_payload, coalesce(p_final, false)), clock_timestamp(),
            coalesce(p_traceparent, ''), coalesce(p_tracestate, '')
        WHERE NOT EXISTS (SELECT FROM herald_sealed s WHERE s.stream = p_stream)
        ON CONFLICT DO NOTHING; -- no target: as insert_record's, for a producer without SELECT on id
        IF FOUND THEN
            RETURN p_id;
        END IF;
    END IF;
    SELECT * INTO res FROM herald_append_rows(p_stream, ARRAY[p_id], ARRAY[p_kind], ARRAY[ct], ARRAY[p_payload],
        ARRAY[coalesce(p_final, false)], ARRAY[p_traceparent], ARRAY[p_tracestate], NULL);
    CASE res.o_verdict
    WHEN 'ok' THEN
        RETURN p_id;
    WHEN 'conflict' THEN
        RAISE EXCEPTION USING ERRCODE = 'HA409', COLUMN = replace(replace(res.o_field, 'content type', 'content_type'), 'final flag', 'final'),
            MESSAGE = CASE WHEN res.o_seq = 0 -- journal.ConflictError's words
                THEN format('herald_append: record id %s already exists in %s, waiting to be numbered, with a different %s',
                            to_json(p_id)::text, res.o_stream, res.o_field)
                ELSE format('herald_append: record id %s already exists as %s#%s with a different %s',
                            to_json(p_id)::text, res.o_stream, res.o_seq, res.o_field) END;
    WHEN 'sealed' THEN
        RAISE EXCEPTION USING ERRCODE = 'HA423', COLUMN = 'stream',
            MESSAGE = CASE WHEN res.o_final_seq = 0
                THEN format('herald_append: stream %s is sealed by a final record not yet numbered', to_json(p_stream)::text)
                ELSE format('herald_append: stream %s is sealed by its final record #%s', to_json(p_stream)::text, res.o_final_seq) END;
    ELSE
        RAISE EXCEPTION USING ERRCODE = '40001',
            MESSAGE = format('herald_append: concurrent appends of record id %s raced this one: retry the transaction', to_json(p_id)::text);
    END CASE;
END
$fn$;

-- The overloads are SQL-standard bodies: bound to herald_append_one when
-- created, whatever the caller's search_path, and inlined into the call.
-- json keeps the caller's text byte for byte; jsonb's text form is its own
-- (keys sorted, one space after ':' and ','): the bytes the digest and the
-- receivers get. traceparent and tracestate: NULL and '' are none.
CREATE FUNCTION herald_append(stream text, id text, kind text, payload bytea,
    content_type text DEFAULT 'application/octet-stream', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE sql
BEGIN ATOMIC
    SELECT herald_append_one($1, $2, $3, $4, coalesce($5, 'application/octet-stream'), $6, false, $7, $8);
END;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload text,
    content_type text DEFAULT 'text/plain; charset=utf-8', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE sql
BEGIN ATOMIC
    SELECT herald_append_one($1, $2, $3, convert_to($4, 'UTF8'), coalesce($5, 'text/plain; charset=utf-8'), $6, false, $7, $8);
END;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload json,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE sql
BEGIN ATOMIC
    SELECT herald_append_one($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true, $7, $8);
END;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload jsonb,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE sql
BEGIN ATOMIC
    SELECT herald_append_one($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true, $7, $8);
END;

-- herald_record_reserved: a row of a reserved stream or with a reserved id
-- (journal.ReservedPrefix, ReservedIDPrefix) goes in only when the
-- session's user is a member of the schema's owner (this function runs as
-- the owner): herald itself, appending its events. The WHEN keeps every
-- other row, a producer's usual append, free of it.
CREATE FUNCTION herald_reserved_row() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    IF NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
        RAISE EXCEPTION USING ERRCODE = '42501', COLUMN = CASE WHEN starts_with(NEW.stream, 'herald/') THEN 'stream' ELSE 'id' END,
            MESSAGE = format('herald_record: stream %s, id %s: streams named herald/… and ids starting with "herald-event:" are herald''s own, and only herald appends them',
                to_json(NEW.stream)::text, to_json(NEW.id)::text);
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER herald_record_reserved BEFORE INSERT ON herald_record FOR EACH ROW
    WHEN (starts_with(NEW.stream, 'herald/') OR starts_with(NEW.id, 'herald-event:'))
    EXECUTE FUNCTION herald_reserved_row();

-- pg_temp last: a producer's temporary table named as one of herald's must
-- not stand in for it in a function that runs as the owner.
DO $do$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'herald_check_name(text, text, int, boolean)', 'herald_media_type(text)', 'herald_check_reserved(text, text)',
        'herald_go_quote(text)', 'herald_check_trace(text, text)', 'herald_stream_subscriptions()',
        'herald_check_entry(text, text, text, text, bytea, bigint, text, text)',
        'herald_append_rows(text, text[], text[], text[], bytea[], boolean[], text[], text[], timestamptz)',
        'herald_append_one(text, text, text, bytea, text, boolean, boolean, text, text)', 'herald_reserved_row()']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
    -- Its insert's custom plan, its checks folded into constants, always
    -- looks cheaper than the generic one: PostgreSQL would plan it anew at
    -- every call.
    ALTER FUNCTION herald_append_rows(text, text[], text[], text[], bytea[], boolean[], text[], text[], timestamptz)
        SET plan_cache_mode = force_generic_plan;
END
$do$;

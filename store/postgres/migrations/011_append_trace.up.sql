-- herald_append takes the W3C trace context of the append (issue 20), as
-- AppendTx does (journal.Entry.Traceparent and Tracestate): the four
-- overloads gain two trailing parameters, traceparent and tracestate, both
-- DEFAULT NULL, so that every call written for migration 010 means what it
-- meant. NULL and '' are no trace context, stored as '' as AppendTx stores
-- it. The checks are journal.ValidateTraceparent's and ValidateTracestate's,
-- after the payload's as in journal.ValidateEntries: HA400, the field in
-- the error's COLUMN, Go's message. Trace context is not content: it is not
-- in the digest, and an id appended again with another one is the same
-- record (the stored trace context stays). Adding parameters makes new
-- functions: the old four and herald_append_entry are dropped and created
-- again; herald_check_name, herald_media_type and herald_check_reserved
-- are not changed.

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

DROP FUNCTION herald_append(text, text, text, bytea, text, boolean);
DROP FUNCTION herald_append(text, text, text, text, text, boolean);
DROP FUNCTION herald_append(text, text, text, json, text, boolean);
DROP FUNCTION herald_append(text, text, text, jsonb, text, boolean);
DROP FUNCTION herald_append_entry(text, text, text, bytea, text, boolean, boolean);

-- herald_append_entry is the append itself; the herald_append overloads
-- call it. payload_is_json: the caller's type (json, jsonb) guarantees a
-- JSON payload. Migration 009's, with the trace context checked after the
-- payload and stored. Not for direct use.
CREATE FUNCTION herald_append_entry(p_stream text, p_id text, p_kind text, p_payload bytea,
    p_content_type text, p_final boolean, payload_is_json boolean,
    p_traceparent text, p_tracestate text) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    ct      text := p_content_type;
    fin     boolean := coalesce(p_final, false);
    mt      text;
    setting text;
    lim     bigint := 1048576; -- journal.DefaultMaxPayload
    n       bigint;
    dig     bytea;
    prev    record;
    field   text;
    v_final_seq bigint;
    v_refused boolean;
BEGIN
    PERFORM herald_check_name('stream', p_stream, 200, false);
    PERFORM herald_check_name('id', p_id, 1024, true);
    PERFORM herald_check_name('kind', p_kind, 200, false);
    IF ct = '' THEN
        ct := 'application/json'; -- journal.DefaultContentType, as for an Entry without one
    END IF;
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
    setting := nullif(current_setting('herald.max_payload', true), '');
    IF setting IS NOT NULL THEN
        IF setting !~ '^[0-9]{1,18}$' OR setting::bigint < 1 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('herald_append: the setting herald.max_payload is %s: it must be a number of bytes, at least 1', to_json(setting)::text);
        END IF;
        lim := setting::bigint;
    END IF;
    n := octet_length(p_payload);
    IF n > lim THEN
        RAISE EXCEPTION USING ERRCODE = 'HA413', COLUMN = 'payload',
            MESSAGE = format('herald_append: invalid payload: is %s bytes, more than the limit of %s', n, lim);
    END IF;
    IF NOT payload_is_json AND (mt = 'application/json' OR mt LIKE '%+json') THEN
        BEGIN
            PERFORM convert_from(p_payload, 'UTF8')::json;
        EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            RAISE EXCEPTION USING ERRCODE = 'HA400', COLUMN = 'payload',
                MESSAGE = format('herald_append: invalid payload: is not valid JSON, as content type %s requires', mt);
        END;
    END IF;
    IF p_traceparent <> '' OR p_tracestate <> '' THEN -- NULL or '': none, nothing to check
        PERFORM herald_check_trace(p_traceparent, p_tracestate);
    END IF;
    -- journal.Digest: each field length-prefixed (8 bytes, big-endian).
    dig := sha256(int8send(octet_length(convert_to(p_stream, 'UTF8'))::bigint) || convert_to(p_stream, 'UTF8')
               || int8send(octet_length(convert_to(p_kind, 'UTF8'))::bigint) || convert_to(p_kind, 'UTF8')
               || int8send(octet_length(convert_to(ct, 'UTF8'))::bigint) || convert_to(ct, 'UTF8')
               || int8send(octet_length(p_payload)::bigint) || p_payload
               || int8send(1::bigint) || CASE WHEN fin THEN '\x01'::bytea ELSE '\x00'::bytea END);
    FOR attempt IN 1..2 LOOP
        -- AppendTx's insert: nothing goes in if the stream is sealed (by a
        -- numbered final record, or a committed one not yet numbered) or
        -- the id is stored; ON CONFLICT skips an id that another
        -- transaction committed since this statement's snapshot.
        INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
        SELECT p_stream, p_id, p_kind, ct, p_payload, fin, dig, clock_timestamp(),
               coalesce(p_traceparent, ''), coalesce(p_tracestate, '')
        WHERE NOT EXISTS (SELECT 1 FROM herald_stream s WHERE s.stream = p_stream AND s.final_seq IS NOT NULL)
          AND NOT EXISTS (SELECT 1 FROM herald_record r WHERE r.stream = p_stream AND r.final AND r.seq IS NULL AND r.refused IS NULL)
          AND NOT EXISTS (SELECT 1 FROM herald_record r WHERE r.id = p_id)
        ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
            RETURN p_id;
        END IF;
        SELECT r.stream, coalesce(r.seq, 0) AS seq, r.kind, r.content_type, r.payload, r.final, r.digest,
               r.refused IS NOT NULL AS refused
        INTO prev FROM herald_record r WHERE r.id = p_id;
        v_refused := false;
        IF FOUND THEN
            v_refused := prev.refused;
            IF prev.stream <> p_stream OR prev.digest <> dig THEN
                field := CASE
                    WHEN prev.stream <> p_stream THEN 'stream'
                    WHEN prev.kind <> p_kind THEN 'kind'
                    WHEN prev.content_type <> ct THEN 'content type'
                    WHEN prev.payload <> p_payload THEN 'payload'
                    WHEN prev.final <> fin THEN 'final flag' END;
                IF field IS NOT NULL THEN
                    RAISE EXCEPTION USING ERRCODE = 'HA409', COLUMN = replace(replace(field, 'content type', 'content_type'), 'final flag', 'final'),
                        MESSAGE = format('herald_append: record id %s already exists as %s#%s with a different %s',
                                         to_json(p_id)::text, prev.stream, prev.seq, field);
                END IF;
            END IF;
            IF NOT v_refused THEN
                RETURN p_id; -- the same entry again: nothing to do
            END IF;
        END IF;
        SELECT s.final_seq INTO v_final_seq FROM herald_stream s WHERE s.stream = p_stream;
        IF v_final_seq IS NOT NULL OR v_refused
           OR EXISTS (SELECT 1 FROM herald_record r WHERE r.stream = p_stream AND r.final AND r.seq IS NULL AND r.refused IS NULL) THEN
            RAISE EXCEPTION USING ERRCODE = 'HA423', COLUMN = 'stream',
                MESSAGE = CASE WHEN v_final_seq IS NULL
                    THEN format('herald_append: stream %s is sealed by a final record not yet numbered', to_json(p_stream)::text)
                    ELSE format('herald_append: stream %s is sealed by its final record #%s', to_json(p_stream)::text, v_final_seq) END;
        END IF;
        -- Blocked by a row gone since (pruned, or rolled back): try again.
    END LOOP;
    RAISE EXCEPTION USING ERRCODE = '40001',
        MESSAGE = format('herald_append: concurrent appends of record id %s raced this one: retry the transaction', to_json(p_id)::text);
END
$fn$;

CREATE FUNCTION herald_append(stream text, id text, kind text, payload bytea,
    content_type text DEFAULT 'application/octet-stream', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, $4, coalesce($5, 'application/octet-stream'), $6, false, $7, $8);
END
$fn$;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload text,
    content_type text DEFAULT 'text/plain; charset=utf-8', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4, 'UTF8'), coalesce($5, 'text/plain; charset=utf-8'), $6, false, $7, $8);
END
$fn$;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload json,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true, $7, $8);
END
$fn$;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload jsonb,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true, $7, $8);
END
$fn$;

-- Pin search_path on every function created here, as migration 009 does.
DO $do$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['herald_go_quote(text)', 'herald_check_trace(text, text)',
        'herald_append_entry(text, text, text, bytea, text, boolean, boolean, text, text)',
        'herald_append(text, text, text, bytea, text, boolean, text, text)', 'herald_append(text, text, text, text, text, boolean, text, text)',
        'herald_append(text, text, text, json, text, boolean, text, text)', 'herald_append(text, text, text, jsonb, text, boolean, text, text)']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I', f, current_schema());
    END LOOP;
END
$do$;

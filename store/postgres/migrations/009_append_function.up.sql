-- herald_append: the append of AppendTx as a SQL function, so that an
-- application in any language appends in its own transaction (issue 18; the
-- package documentation, "Appending from SQL", has the signatures and the
-- error codes). It does what AppendTx does: one plain INSERT with seq NULL,
-- which the sequencer numbers after commit; no NOTIFY and no stream lock.
-- The checks are journal.ValidateEntries' and the digest journal.Digest's,
-- so that an entry appended from Go and from SQL is one record. Byte lengths
-- are of the UTF-8 form. Errors carry the field in the message and in the
-- error's COLUMN field:
--   HA400 invalid input, HA413 payload over the limit, HA409 the id exists
--   with other content, HA423 the stream is sealed.
-- Every function runs with search_path pinned to pg_catalog and the schema
-- it was created in (the ALTER FUNCTIONs at the end), whatever the caller's.

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

-- herald_append_entry is the append itself; the herald_append overloads
-- call it. payload_is_json: the caller's type (json, jsonb) guarantees a
-- JSON payload. Not for direct use.
CREATE FUNCTION herald_append_entry(p_stream text, p_id text, p_kind text, p_payload bytea,
    p_content_type text, p_final boolean, payload_is_json boolean) RETURNS text
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
        INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
        SELECT p_stream, p_id, p_kind, ct, p_payload, fin, dig, clock_timestamp()
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
    content_type text DEFAULT 'application/octet-stream', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, $4, coalesce($5, 'application/octet-stream'), $6, false)
$fn$;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload text,
    content_type text DEFAULT 'text/plain; charset=utf-8', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4, 'UTF8'), coalesce($5, 'text/plain; charset=utf-8'), $6, false)
$fn$;
-- json keeps the caller's text byte for byte; jsonb's text form is its own
-- (keys sorted, one space after ':' and ','): the bytes the digest and the
-- receivers get.
CREATE FUNCTION herald_append(stream text, id text, kind text, payload json,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true)
$fn$;
CREATE FUNCTION herald_append(stream text, id text, kind text, payload jsonb,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true)
$fn$;

DO $do$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'herald_check_name(text, text, int, boolean)', 'herald_media_type(text)',
        'herald_append_entry(text, text, text, bytea, text, boolean, boolean)',
        'herald_append(text, text, text, bytea, text, boolean)', 'herald_append(text, text, text, text, text, boolean)',
        'herald_append(text, text, text, json, text, boolean)', 'herald_append(text, text, text, jsonb, text, boolean)']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I', f, current_schema());
    END LOOP;
END
$do$;

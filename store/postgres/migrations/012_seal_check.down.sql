-- Back to migration 011: the seal probe said with seq IS NULL, no index of
-- sealed streams.
DROP INDEX herald_stream_sealed;
DROP INDEX herald_record_unsequenced_final;
CREATE INDEX herald_record_unsequenced_final ON herald_record (stream) WHERE final AND seq IS NULL AND refused IS NULL;

-- herald_append_entry exactly as migration 011 made it.
CREATE OR REPLACE FUNCTION herald_append_entry(p_stream text, p_id text, p_kind text, p_payload bytea,
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

DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION herald_append_entry(text, text, text, bytea, text, boolean, boolean, text, text) SET search_path = pg_catalog, %I',
        current_schema());
END
$do$;

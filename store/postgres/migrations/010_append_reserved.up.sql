-- herald_append refuses herald's reserved names, as AppendTx does
-- (journal.ValidateEntries): a stream under "herald/" (its operational
-- events, push.EventsStream) and a record id starting "herald-event:" (an
-- event's id is derived from the change, so a producer holding one could
-- make the change fail with a conflict). Both are HA400 naming the field,
-- with Go's message, in Go's order (a name's own checks before its
-- prefix, the stream before the id); herald_append_entry (migration 009)
-- is not changed.
-- Only the four herald_append overloads are redefined, so that the append
-- itself stays in one place.

-- herald_check_reserved raises HA400 if stream or id is reserved. A name
-- that is reserved is first checked as a name (HA400 too), and a reserved
-- id only once the stream passed, so that a doubly bad call gets Go's
-- error; a name that is not reserved costs two prefix tests here, its
-- checks being herald_append_entry's.
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

CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload bytea,
    content_type text DEFAULT 'application/octet-stream', final boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, $4, coalesce($5, 'application/octet-stream'), $6, false);
END
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload text,
    content_type text DEFAULT 'text/plain; charset=utf-8', final boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4, 'UTF8'), coalesce($5, 'text/plain; charset=utf-8'), $6, false);
END
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload json,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true);
END
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload jsonb,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM herald_check_reserved($1, $2);
    RETURN herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true);
END
$fn$;

-- CREATE OR REPLACE resets a function's settings: pin search_path again,
-- as migration 009 does, and for the new function.
DO $do$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['herald_check_reserved(text, text)',
        'herald_append(text, text, text, bytea, text, boolean)', 'herald_append(text, text, text, text, text, boolean)',
        'herald_append(text, text, text, json, text, boolean)', 'herald_append(text, text, text, jsonb, text, boolean)']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I', f, current_schema());
    END LOOP;
END
$do$;

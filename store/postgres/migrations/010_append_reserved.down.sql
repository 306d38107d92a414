-- Back to migration 009's herald_append: reserved names not refused.
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload bytea,
    content_type text DEFAULT 'application/octet-stream', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, $4, coalesce($5, 'application/octet-stream'), $6, false)
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload text,
    content_type text DEFAULT 'text/plain; charset=utf-8', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4, 'UTF8'), coalesce($5, 'text/plain; charset=utf-8'), $6, false)
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload json,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true)
$fn$;
CREATE OR REPLACE FUNCTION herald_append(stream text, id text, kind text, payload jsonb,
    content_type text DEFAULT 'application/json', final boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $fn$
    SELECT herald_append_entry($1, $2, $3, convert_to($4::text, 'UTF8'), coalesce($5, 'application/json'), $6, true)
$fn$;
DO $do$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'herald_append(text, text, text, bytea, text, boolean)', 'herald_append(text, text, text, text, text, boolean)',
        'herald_append(text, text, text, json, text, boolean)', 'herald_append(text, text, text, jsonb, text, boolean)']
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I', f, current_schema());
    END LOOP;
END
$do$;
DROP FUNCTION herald_check_reserved(text, text);

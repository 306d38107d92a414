DROP FUNCTION herald_append(text, text, text, jsonb, text, boolean);
DROP FUNCTION herald_append(text, text, text, json, text, boolean);
DROP FUNCTION herald_append(text, text, text, text, text, boolean);
DROP FUNCTION herald_append(text, text, text, bytea, text, boolean);
DROP FUNCTION herald_append_entry(text, text, text, bytea, text, boolean, boolean);
DROP FUNCTION herald_media_type(text);
DROP FUNCTION herald_check_name(text, text, int, boolean);

-- name: owner
-- The session's role, the schema's owner (herald_record's: the role that
-- ran herald migrate up), and whether the role acts as the owner: a member
-- (herald_record_reserved lets herald's own events in by that) that
-- inherits its privileges (the daemon's writes).
SELECT session_user::text, pg_get_userbyid(c.relowner)::text,
    pg_has_role(session_user, c.relowner, 'MEMBER') AND pg_has_role(current_user, c.relowner, 'USAGE')
FROM pg_class c WHERE c.oid = to_regclass('herald_record')

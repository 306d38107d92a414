-- Each registration's host (push.HostOf: the scheme-less "host:port" of its
-- URL, ASCII lower-cased, the port explicit), the unit of the per-host cap
-- and of host health. Register writes it; this backfills existing rows with
-- the same rule, in SQL: the authority after "://" up to the first "/", "?"
-- or "#", one trailing ":" dropped, and ":80" (http) or ":443" (https) added
-- when no port is given.
ALTER TABLE herald_registration ADD COLUMN host TEXT NOT NULL DEFAULT '';

UPDATE herald_registration SET host = (
    SELECT CASE WHEN instr(a, ':') > 0 AND a NOT LIKE '%]' THEN a
                WHEN lower(herald_registration.url) LIKE 'http:%' THEN a || ':80'
                ELSE a || ':443' END
    FROM (SELECT CASE WHEN b LIKE '%:' THEN substr(b, 1, length(b) - 1) ELSE b END AS a
          FROM (SELECT lower(substr(rest, 1, min(
                    CASE instr(rest, '/') WHEN 0 THEN length(rest) + 1 ELSE instr(rest, '/') END,
                    CASE instr(rest, '?') WHEN 0 THEN length(rest) + 1 ELSE instr(rest, '?') END,
                    CASE instr(rest, '#') WHEN 0 THEN length(rest) + 1 ELSE instr(rest, '#') END) - 1)) AS b
                FROM (SELECT substr(herald_registration.url, instr(herald_registration.url, '://') + 3) AS rest))));

-- Each registration's host (push.HostOf: the scheme-less "host:port" of its
-- URL, ASCII lower-cased, the port explicit), the unit of the per-host cap
-- and of host health. Register writes it; this backfills existing rows with
-- the same rule: the authority after "://" up to the first "/", "?" or "#",
-- one trailing ":" dropped, and ":80" (http) or ":443" (https) added when no
-- port is given. lower() under COLLATE "C" changes ASCII letters only, as
-- HostOf does.
ALTER TABLE herald_registration ADD COLUMN host text COLLATE "C" NOT NULL DEFAULT '';

UPDATE herald_registration r SET host = CASE
        WHEN position(':' in a.a) > 0 AND a.a NOT LIKE '%]' THEN a.a
        WHEN lower(r.url) LIKE 'http:%' THEN a.a || ':80'
        ELSE a.a || ':443' END
FROM (SELECT stream, id,
             regexp_replace(lower(substring(url COLLATE "C" from '://([^/?#]*)')), ':$', '') AS a
      FROM herald_registration) a
WHERE a.stream = r.stream AND a.id = r.id;

-- The sequencer (sequencer.go): the package documentation, "Appending".

-- waiting_running and waiting_new select .cols of the records waiting for
-- the sequencer that satisfy .cond: those of the transactions running at
-- done (one index probe each) and those of the ones that began after (one
-- index range, then .limit). Each probe is a subquery of its own behind
-- OFFSET 0, so that the planner, which cannot estimate a snapshot's
-- transactions, keeps to it rather than joining whole tables.
{{define "waiting_running"}}SELECT {{.cols}} FROM herald_sequencer st CROSS JOIN pg_snapshot_xip(st.done) x CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid = x AND {{.cond}} OFFSET 0 /* a probe per transaction: no join of the whole work list */) r
WHERE st.one AND NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0 /* a probe per record: no hash of herald_seq */) {{.limit}}{{end}}
{{define "waiting_new"}}SELECT {{.cols}} FROM herald_sequencer st CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid >= pg_snapshot_xmax(st.done) AND {{.cond}}
      AND NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0 /* a probe per record: no hash of herald_seq */)
    ORDER BY r.xid, r.pos {{.limit}}) r
WHERE st.one{{end}}

-- in_window selects the records of number's window (st) after the record
-- (.after: xid, pos) that satisfy .cond and wait, at most .limit of each
-- part, with the same probes as above. Only a window that an earlier page
-- left open can hold records numbered already (that page's final records'
-- streams).
{{define "in_window"}}SELECT r.id, r.stream, r.final, r.xid, r.pos FROM st, pg_snapshot_xip(st.done) x CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid = x AND (r.xid, r.pos) > ({{.after}}) AND pg_visible_in_snapshot(r.xid, st.win) AND {{.cond}} OFFSET 0 /* a probe per transaction: no join of the whole work list */) r
WHERE (NOT st.reopened OR NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0 /* a probe per record: no hash of herald_seq */))
UNION ALL
(SELECT r.id, r.stream, r.final, r.xid, r.pos FROM st CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid >= pg_snapshot_xmax(st.done) AND r.xid < pg_snapshot_xmax(st.win)
      AND (r.xid, r.pos) > ({{.after}}) AND pg_visible_in_snapshot(r.xid, st.win) AND {{.cond}}
      AND (NOT st.reopened OR NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0 /* a probe per record: no hash of herald_seq */))
    ORDER BY r.xid, r.pos {{.limit}}) r){{end}}

-- name: any_unsequenced
SELECT EXISTS ({{template "waiting_running" (args "cols" "r.id" "cond" "true" "limit" "")}})
    OR EXISTS ({{template "waiting_new" (args "cols" "r.id" "cond" "true" "limit" "LIMIT 1")}})

-- name: begin
BEGIN ISOLATION LEVEL READ COMMITTED

-- name: try_lock
-- The lock, tried or waited for, held in a transaction-local setting that
-- number reads: a statement of its own, whose snapshot, taken after the
-- lock was granted, sees all the previous holder committed. It is
-- herald_sequencer's row, not an advisory lock: any role may hold any
-- advisory key, and a producer holding this one would stop the numbering.
SELECT set_config('herald.sequencer', EXISTS (SELECT FROM herald_sequencer WHERE one FOR UPDATE SKIP LOCKED)::text, true) = 'true'

-- name: wait_lock
SELECT FROM herald_sequencer WHERE one FOR UPDATE

-- name: held
SELECT set_config('herald.sequencer', 'true', true) = 'true'

-- name: commit
COMMIT

-- name: abort
ROLLBACK

-- name: number
-- The step. Its window (win) is its own snapshot unless a full page
-- (@page records) left one open; a full page takes the rest of the streams
-- whose final record it holds (cand), so that a final record is numbered
-- after every record committed with it. Only the lock's holder moves a
-- head, so the snapshot's heads are the rows'; a stream with no row in the
-- snapshot gets one by an upsert (Register may have made it since). Each
-- MATERIALIZED part is computed once, as written: the planner would
-- otherwise inline it into each of its readers and run it again there.
WITH st AS MATERIALIZED ( -- one snapshot for every part, read once
    SELECT done, coalesce(win, pg_current_snapshot()) AS win, win IS NOT NULL AS reopened,
        coalesce(after_xid, '0'::xid8) AS after_xid, coalesce(after_pos, 0) AS after_pos
    FROM herald_sequencer WHERE one AND current_setting('herald.sequencer', true) = 'true'
), page AS MATERIALIZED ( -- the page once: the planner would scan again for each reader
    SELECT * FROM ({{template "in_window" (args "after" "st.after_xid, st.after_pos" "cond" "true" "limit" "LIMIT @page")}}) c ORDER BY xid, pos LIMIT @page
), last AS MATERIALIZED ( -- once, as page
    SELECT xid, pos FROM page ORDER BY xid DESC, pos DESC LIMIT 1
), cand AS MATERIALIZED ( -- once, as page: the window functions below read it
    SELECT * FROM page
    UNION ALL
    SELECT c.* FROM last CROSS JOIN LATERAL ({{template "in_window" (args "after" "last.xid, last.pos" "cond" "r.stream IN (SELECT stream FROM page WHERE final)" "limit" "")}}) c
    WHERE (SELECT count(*) FROM page) = @page
), ranked AS MATERIALIZED ( -- once: fate and per_stream would each rank again
    SELECT c.id, c.stream, c.final, coalesce(s.head, 0) AS head, s.final_seq, s.head IS NOT NULL AS known,
        row_number() OVER w AS r,
        count(*) FILTER (WHERE NOT c.final) OVER w1 + CASE WHEN bool_or(c.final) OVER w1 THEN 1 ELSE 0 END AS n
    FROM cand c
    LEFT JOIN LATERAL (SELECT s.head, s.final_seq FROM herald_stream s WHERE s.stream = c.stream OFFSET 0) s ON true -- a probe per stream, not a join of every stream
    WINDOW w AS (PARTITION BY c.stream ORDER BY c.final, c.xid, c.pos), w1 AS (PARTITION BY c.stream)
), fate AS MATERIALIZED ( -- once: decided and per_stream read it
    SELECT id, stream, final, head, final_seq, known, n,
        CASE WHEN final_seq IS NULL AND r <= n THEN head + r END AS seq,
        CASE WHEN final_seq IS NOT NULL THEN format('committed after the stream''s final record #%s was sequenced', final_seq)
             WHEN r > n THEN format('another final record of the stream, #%s, was sequenced first', head + n) END AS reason
    FROM ranked
), per_stream AS MATERIALIZED ( -- once: moved and created read it
    SELECT stream, max(head + n) AS head, bool_or(final) AS has_final, bool_or(known) AS known FROM fate
    WHERE final_seq IS NULL GROUP BY stream
), moved AS (
    UPDATE herald_stream s SET head = p.head, final_seq = CASE WHEN p.has_final THEN p.head END, pending = true
    FROM per_stream p
    WHERE s.stream = p.stream AND p.known
), created AS (
    INSERT INTO herald_stream AS s (stream, head, final_seq, pending)
    SELECT stream, head, CASE WHEN has_final THEN head END, true FROM per_stream WHERE NOT known
    ON CONFLICT (stream) DO UPDATE SET head = excluded.head, final_seq = excluded.final_seq, pending = true
), decided AS (
    INSERT INTO herald_seq (id, stream, seq, refused)
    SELECT id, stream, seq, reason FROM fate
    RETURNING seq IS NOT NULL AS numbered
), progress AS (
    UPDATE herald_sequencer x SET
        done = CASE WHEN p.full THEN x.done ELSE st.win END,
        win = CASE WHEN p.full THEN st.win END,
        after_xid = CASE WHEN p.full THEN (SELECT xid FROM last) END,
        after_pos = CASE WHEN p.full THEN (SELECT pos FROM last) END
    FROM st, (SELECT count(*) = @page AS full FROM page) p
    WHERE x.one AND (st.reopened OR EXISTS (SELECT 1 FROM page))
), notified AS (
    SELECT pg_notify('{{notify_channel}}', (SELECT count(*) FROM decided WHERE numbered)::text)
    WHERE EXISTS (SELECT 1 FROM decided WHERE numbered)
)
SELECT (SELECT count(*) FROM page)::int, (SELECT count(*) FROM decided WHERE numbered)::int,
    (SELECT count(*) FROM decided WHERE NOT numbered)::int, (SELECT count(*) FROM notified)::int

-- name: unnumbered
-- Counts, per stream (@stream only, or all for ''), the records waiting
-- for the sequencer, with the oldest's appended-at. It reads the
-- sequencer's work list, which a running sequencer keeps short: under the
-- planner settings, as the sequencer's probe.
SELECT w.stream, count(*), min(w.appended_at) FROM (
{{template "waiting_running" (args "cols" "r.stream, r.appended_at" "cond" "(@stream::text = '' OR r.stream = @stream)" "limit" "")}}
UNION ALL {{template "waiting_new" (args "cols" "r.stream, r.appended_at" "cond" "(@stream::text = '' OR r.stream = @stream)" "limit" "")}}) w
GROUP BY w.stream

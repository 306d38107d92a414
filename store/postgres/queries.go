package postgres

// Every SQL statement of the store; parameters are numbered as passed.

// The schema's version (migrate.go, readVersion).
const (
	sqlSchemaProbe = `SELECT current_database(), to_regclass($1::text) IS NOT NULL,
       (SELECT count(*) = 2 FROM pg_attribute
        WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped
          AND ((attname = 'version' AND atttypid = 'bigint'::regtype)
            OR (attname = 'dirty' AND atttypid = 'boolean'::regtype))),
       to_regclass('herald_stream') IS NOT NULL OR to_regclass('herald_record') IS NOT NULL
    OR to_regclass('herald_registration') IS NOT NULL OR to_regclass('herald_evidence') IS NOT NULL`
	sqlCurrentVersion = `SELECT version, dirty FROM ` + versionTable + ` LIMIT 1`
	migrationLockKey  = `hashtextextended('herald_schema_migrations', 0)`
	sqlMigrationLock  = `SELECT pg_advisory_xact_lock(` + migrationLockKey + `)`
	sqlCreateVersions = `CREATE TABLE IF NOT EXISTS ` + versionTable + ` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`
	sqlClearVersion   = `DELETE FROM ` + versionTable
	sqlRecordVersion  = `INSERT INTO ` + versionTable + ` (version, dirty) VALUES ($1, false)`
)

// The journal (journal.go): sql/journal.sql.
var (
	sqlAppendRows    = stmt("append_rows")
	sqlLookupIDs     = stmt("lookup_ids")
	sqlHead          = stmt("head")
	sqlFinalSeq      = stmt("final_seq")
	sqlRead          = stmt("read")
	sqlLookupVerdict = stmt("lookup_verdict")
	sqlRefused       = stmt("refused")
)

// The sequencer (sequencer.go): package doc, "Appending".
var (
	sqlAnyUnsequenced = `SELECT EXISTS (` + waitingRunning("r.id", "true", "") + `) OR EXISTS (` + waitingNew("r.id", "true", "LIMIT 1") + `)`
	sqlBegin          = `BEGIN ISOLATION LEVEL READ COMMITTED`
	// The lock, tried or waited for, held in a transaction-local setting
	// that sqlNumber reads: a statement of its own, whose snapshot, taken
	// after the lock was granted, sees all the previous holder committed.
	sqlTryLock  = `SELECT set_config('herald.sequencer', pg_try_advisory_xact_lock($1)::text, true) = 'true'`
	sqlWaitLock = `SELECT pg_advisory_xact_lock($1)`
	sqlHeld     = `SELECT set_config('herald.sequencer', 'true', true) = 'true'`
	sqlCommit   = `COMMIT`
	sqlAbort    = `ROLLBACK`
	// sqlNumber is the step. Its window (win) is its own snapshot unless a
	// full page ($1 records) left one open; a full page takes the rest of
	// the streams whose final record it holds (cand), so that a final record
	// is numbered after every record committed with it. Only the lock's
	// holder moves a head, so the snapshot's heads are the rows'; a stream
	// with no row in the snapshot gets one by an upsert (Register may have
	// made it since).
	sqlNumber = `WITH st AS MATERIALIZED (
    SELECT done, coalesce(win, pg_current_snapshot()) AS win, win IS NOT NULL AS reopened,
        coalesce(after_xid, '0'::xid8) AS after_xid, coalesce(after_pos, 0) AS after_pos
    FROM herald_sequencer WHERE one AND current_setting('herald.sequencer', true) = 'true'
), page AS MATERIALIZED (
    SELECT * FROM (` + inWindow("st.after_xid, st.after_pos", "true", "LIMIT $1") + `) c ORDER BY xid, pos LIMIT $1
), last AS MATERIALIZED (
    SELECT xid, pos FROM page ORDER BY xid DESC, pos DESC LIMIT 1
), cand AS MATERIALIZED (
    SELECT * FROM page
    UNION ALL
    SELECT c.* FROM last CROSS JOIN LATERAL (` + inWindow("last.xid, last.pos", "r.stream IN (SELECT stream FROM page WHERE final)", "") + `) c
    WHERE (SELECT count(*) FROM page) = $1
), ranked AS MATERIALIZED (
    SELECT c.id, c.stream, c.final, coalesce(s.head, 0) AS head, s.final_seq, s.head IS NOT NULL AS known,
        row_number() OVER w AS r,
        count(*) FILTER (WHERE NOT c.final) OVER w1 + CASE WHEN bool_or(c.final) OVER w1 THEN 1 ELSE 0 END AS n
    FROM cand c
    LEFT JOIN LATERAL (SELECT s.head, s.final_seq FROM herald_stream s WHERE s.stream = c.stream OFFSET 0) s ON true
    WINDOW w AS (PARTITION BY c.stream ORDER BY c.final, c.xid, c.pos), w1 AS (PARTITION BY c.stream)
), fate AS MATERIALIZED (
    SELECT id, stream, final, head, final_seq, known, n,
        CASE WHEN final_seq IS NULL AND r <= n THEN head + r END AS seq,
        CASE WHEN final_seq IS NOT NULL THEN format('committed after the stream''s final record #%s was sequenced', final_seq)
             WHEN r > n THEN format('another final record of the stream, #%s, was sequenced first', head + n) END AS reason
    FROM ranked
), per_stream AS MATERIALIZED (
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
    FROM st, (SELECT count(*) = $1 AS full FROM page) p
    WHERE x.one AND (st.reopened OR EXISTS (SELECT 1 FROM page))
), notified AS (
    SELECT pg_notify('` + NotifyChannel + `', (SELECT count(*) FROM decided WHERE numbered)::text)
    WHERE EXISTS (SELECT 1 FROM decided WHERE numbered)
)
SELECT (SELECT count(*) FROM page)::int, (SELECT count(*) FROM decided WHERE numbered)::int,
    (SELECT count(*) FROM decided WHERE NOT numbered)::int, (SELECT count(*) FROM notified)::int`
)

// Registrations (registrations.go): sql/registrations.sql.
var (
	sqlMarkStream         = stmt("mark_stream")
	sqlRegistrationExists = stmt("registration_exists")
	sqlUpsertRegistration = stmt("upsert_registration")
	sqlDeleteRegistration = stmt("delete_registration")
	sqlGet                = stmt("get")
	sqlList               = stmt("list")
	sqlStatsNamespaces    = stmt("stats_namespaces")
	sqlStatsLagging       = stmt("stats_lagging")
	sqlStatsOldestParked  = stmt("stats_oldest_parked")
)

// Due (registrations.go): sql/due.sql.
var (
	sqlPlanner         = []string{stmt("planner_seqscan"), stmt("planner_jit"), stmt("planner_generic")}
	sqlDueAsyncCommit  = stmt("due_async_commit")
	sqlClearCandidates = stmt("clear_candidates")
	sqlClearPending    = stmt("clear_pending")
	sqlPick            = stmt("pick")
	sqlClaim           = stmt("claim")
	sqlUnserved        = stmt("unserved")
)

// Host health (hosts.go, and Due's probes): sql/hosts.sql.
var (
	sqlRenew         = stmt("renew")
	sqlLockProbes    = stmt("lock_probes")
	sqlTroubledHosts = stmt("troubled_hosts")
	sqlMoveProbe     = stmt("move_probe")
	sqlEnsureHost    = stmt("ensure_host")
	sqlLockHost      = stmt("lock_host")
	sqlPutHost       = stmt("put_host")
	sqlHosts         = stmt("hosts")
)

// Cursors, failures, operator moves and evidence (cursor.go, hosts.go):
// sql/cursor.sql.
var (
	sqlFence          = stmt("fence")
	sqlAdvance        = stmt("advance")
	sqlCheckpoint     = stmt("checkpoint")
	sqlRetry          = stmt("retry")
	sqlPark           = stmt("park")
	sqlHostFailed     = stmt("host_failed")
	sqlGenericPlans   = stmt("generic_plans")
	sqlFenceBatch     = stmt("fence_batch")
	sqlAdvanceBatch   = stmt("advance_batch")
	sqlComplete       = stmt("complete")
	sqlUnpark         = stmt("unpark")
	sqlMove           = stmt("move")
	sqlInsertEvidence = stmt("insert_evidence")
	sqlTrimEvidence   = stmt("trim_evidence")
	sqlEvidence       = stmt("evidence")
)

// Retention (retention.go). The stream's row lock keeps every cursor from
// moving below the new low-water mark while it is computed.
var (
	sqlPruneCandidates = `SELECT stream FROM herald_stream WHERE stream >= $1 ORDER BY stream LIMIT $2`
	sqlPruneLock       = `SELECT head, final_seq IS NOT NULL, oldest_seq FROM herald_stream WHERE stream = $1
FOR NO KEY UPDATE SKIP LOCKED`
	sqlPruneLow     = `SELECT min(next_seq), count(*) FROM herald_registration WHERE stream = $1`
	sqlPruneRefused = `WITH gone AS (
    DELETE FROM herald_seq q USING herald_record r
    WHERE q.stream = $1 AND q.refused IS NOT NULL AND r.id = q.id AND r.appended_at <= $2
    RETURNING q.id
)
DELETE FROM herald_record WHERE id IN (SELECT id FROM gone)`
	sqlPruneRun = `SELECT q.seq, r.appended_at, length(r.payload) FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.stream = $1 AND q.seq >= $2 AND q.seq < $3 ORDER BY q.seq LIMIT $4`
	sqlPruneRecords = `WITH gone AS (DELETE FROM herald_seq WHERE stream = $1 AND seq < $2 RETURNING id)
DELETE FROM herald_record WHERE id IN (SELECT id FROM gone)`
	sqlPruneMark = `UPDATE herald_stream SET oldest_seq = $2 WHERE stream = $1`
	// A sealed, completed stream goes once nothing of it is left, none
	// waiting for the sequencer either (it would start a stream anew).
	sqlPruneStream = `DELETE FROM herald_stream WHERE stream = $1
  AND NOT EXISTS (SELECT 1 FROM herald_seq WHERE stream = $1 AND seq IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM herald_seq WHERE stream = $1 AND refused IS NOT NULL)
  AND NOT EXISTS (` + waitingRunning("1", "r.stream = $1", "") + `)
  AND NOT EXISTS (` + waitingNew("1", "r.stream = $1", "LIMIT 1") + `)`
	sqlPruneEvidence = `DELETE FROM herald_evidence WHERE stream = $1 AND at <= $2 AND n NOT IN (
    SELECT max(e.n) FROM herald_evidence e
    JOIN herald_registration r ON r.stream = e.stream AND r.id = e.registration
    WHERE e.stream = $1 AND r.parked AND e.event = $3
    GROUP BY e.registration)`
	// A host row goes once no registration is of the host and it failed
	// last at or before $1. One pass of the registrations (an anti-join):
	// an index on their host would cost every cursor write an entry.
	// HostFailed locks the row and moves last_failure_at: a concurrent
	// delete re-checks it and keeps the row.
	prunableHosts = `FROM herald_host h WHERE coalesce(h.last_failure_at, h.since) <= $1
  AND NOT EXISTS (SELECT 1 FROM herald_registration r WHERE r.host = h.host)`
	sqlPruneHosts         = `WITH gone AS (DELETE ` + prunableHosts + ` RETURNING 1) SELECT count(*) FROM gone`
	sqlCountPrunableHosts = `SELECT count(*) ` + prunableHosts
	sqlStreams            = `SELECT s.stream, s.head, s.final_seq IS NOT NULL, s.oldest_seq,
    (SELECT count(*) FROM herald_registration r WHERE r.stream = s.stream),
    (SELECT coalesce(sum(length(x.payload)), 0) FROM herald_seq q JOIN herald_record x ON x.id = q.id
     WHERE q.stream = s.stream AND q.seq >= s.oldest_seq)
FROM herald_stream s
WHERE ($1::text = '' OR s.stream = $1) AND s.stream > $2
ORDER BY s.stream
LIMIT $3`
)

// sqlUnnumbered counts, per stream ($1 only, or all for ”), the records
// waiting for the sequencer, with the oldest's appended-at. It reads the
// sequencer's work list, which a running sequencer keeps short: under
// sqlPlanner, as the sequencer's probe.
var sqlUnnumbered = `SELECT w.stream, count(*), min(w.appended_at) FROM (` +
	waitingRunning("r.stream, r.appended_at", "($1::text = '' OR r.stream = $1)", "") + `
UNION ALL ` + waitingNew("r.stream, r.appended_at", "($1::text = '' OR r.stream = $1)", "") + `) w
GROUP BY w.stream`

// waitingRunning and waitingNew select cols of the records waiting for the
// sequencer that satisfy cond: those of the transactions running at done
// (one index probe each) and those of the ones that began after (one index
// range, then limit). Each probe is a subquery of its own, so that the
// planner, which cannot estimate a snapshot's transactions, keeps to it.
func waitingRunning(cols, cond, limit string) string {
	return `SELECT ` + cols + ` FROM herald_sequencer st CROSS JOIN pg_snapshot_xip(st.done) x CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid = x AND ` + cond + ` OFFSET 0) r
WHERE st.one AND NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0) ` + limit
}

func waitingNew(cols, cond, limit string) string {
	return `SELECT ` + cols + ` FROM herald_sequencer st CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid >= pg_snapshot_xmax(st.done) AND ` + cond + `
      AND NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0)
    ORDER BY r.xid, r.pos ` + limit + `) r
WHERE st.one`
}

// inWindow selects the records of sqlNumber's window (st) after the record
// after (xid, pos) that satisfy cond and wait, at most limit of each part.
func inWindow(after, cond, limit string) string {
	c := `(r.xid, r.pos) > (` + after + `) AND pg_visible_in_snapshot(r.xid, st.win) AND ` + cond
	// Only a window that an earlier page left open can hold records
	// numbered already (that page's final records' streams).
	fresh := `(NOT st.reopened OR NOT EXISTS (SELECT 1 FROM herald_seq q WHERE q.id = r.id OFFSET 0))`
	return `SELECT r.id, r.stream, r.final, r.xid, r.pos FROM st, pg_snapshot_xip(st.done) x CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid = x AND ` + c + ` OFFSET 0) r
WHERE ` + fresh + `
UNION ALL
(SELECT r.id, r.stream, r.final, r.xid, r.pos FROM st CROSS JOIN LATERAL (
    SELECT * FROM herald_record r WHERE r.xid >= pg_snapshot_xmax(st.done) AND r.xid < pg_snapshot_xmax(st.win) AND ` + c + `
      AND ` + fresh + `
    ORDER BY r.xid, r.pos ` + limit + `) r)`
}

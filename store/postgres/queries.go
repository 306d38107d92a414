package postgres

import "strings"

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

// The journal (journal.go): package doc, "Appending".
const (
	sqlSealState = `SELECT (SELECT final_seq FROM herald_stream WHERE stream = $1),
       EXISTS (SELECT 1 FROM herald_record WHERE stream = $1 AND final)`
	sqlLookupIDs = `SELECT r.id, r.stream, coalesce(q.seq, 0), r.kind, r.content_type, r.final, r.appended_at, r.traceparent, r.tracestate,
    r.digest, q.refused IS NOT NULL
FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = ANY($1::text[])`
	// ON CONFLICT skips an id another transaction committed since the
	// statement's snapshot: then fewer ids come back.
	sqlInsertRecords = `WITH seal AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM herald_record WHERE stream = $1 AND final)
        OR EXISTS (SELECT 1 FROM herald_record WHERE id = ANY($2::text[])) AS blocked
), ins AS (
    INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
    SELECT $1, u.id, u.kind, u.content_type, u.payload, u.final, u.digest, $8, u.traceparent, u.tracestate
    FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::boolean[], $7::bytea[], $9::text[], $10::text[])
         WITH ORDINALITY AS u (id, kind, content_type, payload, final, digest, traceparent, tracestate, ord)
    WHERE NOT (SELECT blocked FROM seal)
    ORDER BY u.ord
    ON CONFLICT (id) DO NOTHING
    RETURNING id
)
SELECT ARRAY(SELECT id FROM ins), (SELECT blocked FROM seal)`
	// For one entry, the usual append: the seal check is one probe of an
	// index range, the stream's final records (herald_record_final).
	sqlInsertRecord = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
SELECT $1::text, $2::text, $3::text, $4::text, $5::bytea, $6::boolean, $7::bytea, $8::timestamptz, $9::text, $10::text
WHERE NOT EXISTS (SELECT FROM herald_record WHERE stream = $1 AND final)
ON CONFLICT (id) DO NOTHING`
	sqlUndoInsert = `DELETE FROM herald_record WHERE id = ANY($1::text[])`
	sqlHead       = `SELECT head FROM herald_stream WHERE stream = $1`
	sqlFinalSeq   = `SELECT coalesce(final_seq, 0) FROM herald_stream WHERE stream = $1`
	recordColumns = `coalesce(q.seq, 0), r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate`
	// A page (journal.Journal.Read): the first $3 numbered records from $2,
	// up to the last whose running payload total is within $4, the first
	// whatever its size. The window runs on the index range under the
	// LIMIT; octet_length reads a TOASTed payload's size from its pointer,
	// and the payloads past the bound are never fetched.
	sqlRead = `SELECT seq, id, kind, content_type, payload, final, appended_at, traceparent, tracestate FROM (
	SELECT q.seq, r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate,
		row_number() OVER w AS n, sum(octet_length(r.payload)) OVER w AS total
	FROM herald_seq q JOIN herald_record r ON r.id = q.id
	WHERE q.stream = $1 AND q.seq >= $2
	WINDOW w AS (ORDER BY q.seq ROWS UNBOUNDED PRECEDING)
	ORDER BY q.seq LIMIT $3) page
WHERE n = 1 OR total <= $4 ORDER BY seq`
	sqlLookupAny = `SELECT ` + recordColumns + `, r.stream FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = $1`
	// Lookup: a record without a seq is refused (refused set) or waiting.
	sqlLookupVerdict = `SELECT ` + recordColumns + `, r.stream, q.refused FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = $1`
	sqlRefused       = `SELECT q.stream, q.id, r.kind, r.appended_at, q.refused FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.refused IS NOT NULL AND ($1::text = '' OR q.stream = $1)
ORDER BY q.stream, r.pos LIMIT $2`
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

// Registrations (registrations.go). statusColumns are what scanStatus reads.
const (
	statusColumns = `r.stream, r.id, r.namespace, r.url, r.config, r.on_rejected, r.next_seq, r.attempts,
       r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until, r.host_failures, r.kinds, r."window",
       r.retry, r.failing_since, r.paused, s.head, s.final_seq IS NOT NULL`
	statusFrom = statusColumns + `
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream`

	// Lock the stream row first (the sequencer's lock order) and set the
	// pending marker: a registration may lag after the change.
	sqlMarkStream = `INSERT INTO herald_stream AS s (stream, pending) VALUES ($1, true)
ON CONFLICT (stream) DO UPDATE SET pending = true RETURNING s.head, s.final_seq IS NOT NULL, s.oldest_seq`
	sqlRegistrationExists = `SELECT EXISTS (SELECT 1 FROM herald_registration WHERE stream = $1 AND id = $2)`
	sqlUpsertRegistration = `WITH r AS (
INSERT INTO herald_registration AS r
    (stream, id, namespace, url, config, on_rejected, next_seq, next_attempt_at, host, kinds, "window", retry)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (stream, id) DO UPDATE
SET namespace = excluded.namespace, url = excluded.url, config = excluded.config, on_rejected = excluded.on_rejected,
    host = excluded.host, kinds = excluded.kinds, "window" = excluded."window", retry = excluded.retry
RETURNING r.*)
SELECT ` + statusColumns + ` FROM r JOIN herald_stream s ON s.stream = r.stream`
	// Reseal (registrations.go) reads a page of configs in key order and
	// writes each anew where the row still holds what it read.
	sqlResealPage = `SELECT stream, id, config FROM herald_registration WHERE (stream, id) > ($1, $2)
ORDER BY stream, id LIMIT $3`
	sqlReseal = `UPDATE herald_registration r SET config = n.new
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[]) AS n(stream, id, old, new)
WHERE r.stream = n.stream AND r.id = n.id AND r.config = n.old`
	sqlDeleteRegistration = `DELETE FROM herald_registration WHERE stream = $1 AND id = $2`
	sqlGet                = `SELECT ` + statusFrom + ` WHERE r.stream = $1 AND r.id = $2`
	sqlList               = `SELECT ` + statusFrom + `
WHERE ($1::text = '' OR r.stream = $1) AND ($2::text = '' OR r.namespace = $2)
  AND (NOT $3::boolean OR r.parked) AND (NOT $4::boolean OR r.next_seq <= s.head)
  AND (r.stream, r.id) > ($5::text, $6::text)
ORDER BY r.stream, r.id
LIMIT $7`
	sqlStatsNamespaces = `SELECT r.namespace,
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts = 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts > 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq > s.head),
    count(*) FILTER (WHERE r.parked AND NOT r.paused),
    count(*) FILTER (WHERE r.paused),
    count(*) FILTER (WHERE r.lease_until > $1),
    coalesce(sum(GREATEST(s.head - r.next_seq + 1, 0)), 0)::bigint
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
GROUP BY r.namespace`
	sqlStatsLagging = `SELECT ` + statusFrom + `
WHERE r.next_seq <= s.head
ORDER BY s.head - r.next_seq DESC, r.stream, r.id
LIMIT $1`
	sqlStatsOldestParked = `SELECT ` + statusFrom + `
WHERE r.parked AND NOT r.paused
ORDER BY r.parked_at, r.stream, r.id
LIMIT 1`
)

// Due (registrations.go): package doc, "Idle costs nothing" and "Claiming and
// fencing". Every probe of herald_registration is a subquery per pending
// stream (or candidate) behind OFFSET 0, so that the planner never hashes
// the whole table, whatever its statistics say.
var (
	// Due's and the sequencer's settings: the planner's statistics lag the
	// pending markers and cannot estimate a snapshot's transactions, so it
	// would scan whole tables and JIT-compile; generic plans spare planning.
	sqlPlanner        = []string{`SET LOCAL enable_seqscan = off`, `SET LOCAL jit = off`, `SET LOCAL plan_cache_mode = force_generic_plan`}
	sqlDueAsyncCommit = `SET LOCAL synchronous_commit = off`
	// sqlClearCandidates keeps the streams it locks in a setting for sqlClearPending.
	sqlClearCandidates = `SELECT set_config('herald.idle', coalesce(array_agg(c.stream), '{}')::text, true)
FROM (SELECT s.stream FROM herald_stream s
    WHERE s.pending AND ` + noneLagging + `
    LIMIT 10000
    FOR NO KEY UPDATE OF s SKIP LOCKED) c`
	sqlClearPending = `UPDATE herald_stream s SET pending = false
WHERE s.stream = ANY(current_setting('herald.idle')::text[]) AND ` + noneLagging
	// The claim, in two statements. sqlPick reads, for each pending stream
	// and each cursor at or behind its head where unparked registrations
	// wait, the first $4 of namespace $1's due at $2 and unleased, in claim
	// order, leaving out the hosts held ($3): a loose scan of
	// herald_registration_claim, one probe per such cursor (of any
	// namespace) and none past the head, then one range each, stopped by
	// the LIMIT. It reads no registration beyond those, and none at the head.
	sqlPick = `WITH RECURSIVE cursors (stream, head, next_seq) AS (
    SELECT s.stream, s.head, c.next_seq
    FROM herald_stream s
    CROSS JOIN LATERAL (
        SELECT r.next_seq FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
        ORDER BY r.next_seq LIMIT 1) c
    WHERE s.pending
  UNION ALL
    SELECT p.stream, p.head, c.next_seq
    FROM cursors p
    CROSS JOIN LATERAL (
        SELECT r.next_seq FROM herald_registration r
        WHERE r.stream = p.stream AND NOT r.parked AND r.next_seq > p.next_seq AND r.next_seq <= p.head
        ORDER BY r.next_seq LIMIT 1) c
    WHERE p.next_seq < p.head
)
SELECT r.stream, c.next_seq, r.id, r.host
FROM cursors c
CROSS JOIN LATERAL (
    SELECT r.stream, r.id, r.host, r.next_attempt_at FROM herald_registration r
    WHERE r.stream = c.stream AND NOT r.parked AND r.next_seq = c.next_seq AND r.namespace = $1
      AND r.next_attempt_at <= $2 AND (r.lease_until IS NULL OR r.lease_until <= $2)
      AND r.host <> ALL($3::text[])
    ORDER BY r.next_attempt_at, r.id
    LIMIT $4) r
ORDER BY r.next_attempt_at, r.stream, r.id`
	// sqlClaim leases the first $3 of the picks ($6, $7, in claim order)
	// that are still due, unleased and lagging, skipping those another
	// claim has locked, and stamps next_attempt_at = $2.
	sqlClaim = `WITH locked AS MATERIALIZED (
    SELECT l.tid, p.ord, p.stream, p.id
    FROM unnest($6::text[], $7::text[]) WITH ORDINALITY AS p (stream, id, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = p.stream AND r.id = p.id AND r.namespace = $1 AND NOT r.parked
          AND r.next_attempt_at <= $2 AND (r.lease_until IS NULL OR r.lease_until <= $2)
          AND r.next_seq <= (SELECT s.head FROM herald_stream s WHERE s.stream = r.stream)
        FOR NO KEY UPDATE SKIP LOCKED) l
    LIMIT $3::int
), claimed AS (
    UPDATE herald_registration r SET lease_owner = $4, lease_until = $5, next_attempt_at = $2
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM locked))
    RETURNING r.*
)
SELECT ` + statusColumns + `
FROM claimed r
JOIN locked l ON l.stream = r.stream AND l.id = r.id
CROSS JOIN LATERAL (SELECT s.head, s.final_seq FROM herald_stream s WHERE s.stream = r.stream OFFSET 0) s
ORDER BY l.ord`
	// The due registrations of pending streams at $2 of other namespaces
	// than $1, not of a host held ($3): RunOnce's report only
	// (DueQuery.CountUnserved), it reads them all.
	sqlUnserved = `SELECT count(*)
FROM herald_stream s
CROSS JOIN LATERAL (
    SELECT 1 FROM herald_registration r
    WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
      AND r.namespace <> $1 AND r.next_attempt_at <= $2
      AND (r.lease_until IS NULL OR r.lease_until <= $2)
      AND r.host <> ALL($3::text[])
    OFFSET 0) c
WHERE s.pending`
	noneLagging = `NOT EXISTS (
        SELECT 1 FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
        OFFSET 0)`
)

// Host health (hosts.go, and Due's probes). Lock order: a registration's row
// before its host's; Due locks host rows with SKIP LOCKED only.
const (
	// The leases still held by the claims ($2, $3, $4 in step, sorted by
	// key), to $1: locked in key order, as AdvanceBatch locks, so that the
	// two never deadlock.
	sqlRenew = `WITH c AS MATERIALIZED (
    SELECT r.tid
    FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u (stream, id, owner, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = u.stream AND r.id = u.id AND r.lease_owner = u.owner AND r.lease_owner <> ''
        FOR NO KEY UPDATE OF r) r
    ORDER BY u.ord
)
UPDATE herald_registration r SET lease_until = $1
WHERE r.ctid = ANY (ARRAY(SELECT tid FROM c))
RETURNING r.stream, r.id, r.lease_owner`
	hostColumns = `host, state, since, failures, probes, next_probe_at, last_error, last_failure_at, failing_since`
	// The hosts whose probe is due at $1: this claim owns those it locks.
	sqlLockProbes = `SELECT ` + hostColumns + ` FROM herald_host
WHERE state <> 'up' AND next_probe_at <= $1
ORDER BY host
FOR NO KEY UPDATE SKIP LOCKED`
	// Read before the claim, which takes the held hosts as an array: a few
	// comparisons cost a row less than a lookup of its host.
	sqlTroubledHosts = `SELECT ` + hostColumns + ` FROM herald_host WHERE state <> 'up' OR failures > 0`
	sqlMoveProbe     = `UPDATE herald_host SET probes = $2, next_probe_at = $3 WHERE host = $1`
	sqlEnsureHost    = `INSERT INTO herald_host (host, state, since) VALUES ($1, 'up', $2) ON CONFLICT DO NOTHING`
	sqlLockHost      = `SELECT ` + hostColumns + ` FROM herald_host WHERE host = $1 FOR NO KEY UPDATE`
	sqlPutHost       = `UPDATE herald_host SET state = $2, since = $3, failures = $4, probes = $5, next_probe_at = $6,
    last_error = $7, last_failure_at = $8, failing_since = $9
WHERE host = $1`
	sqlHosts = `WITH held AS (
    SELECT r.host, count(*) AS n
    FROM herald_registration r
    JOIN herald_host d ON d.host = r.host AND d.state <> 'up'
    JOIN herald_stream s ON s.stream = r.stream
    WHERE NOT r.parked AND r.next_seq <= s.head
    GROUP BY r.host
)
SELECT h.host, h.state, h.since, h.failures, h.probes, h.next_probe_at, h.last_error, h.last_failure_at, h.failing_since,
    coalesce(held.n, 0)
FROM herald_host h LEFT JOIN held ON held.host = h.host
WHERE ($1::text = '' OR h.host = $1) AND ($2::text = '' OR h.state = $2) AND h.host > $3
ORDER BY h.host
LIMIT $4`
)

// Cursors, failures, operator moves and evidence (cursor.go): package doc,
// "Claiming and fencing".
var (
	sqlFence = `SELECT r.lease_owner, s.head, r.next_seq, r.host_failures, r.namespace, r.url, r.next_attempt_at, r.parked, r.paused
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = $1 AND r.id = $2
FOR NO KEY UPDATE OF r`
	sqlAdvance    = `UPDATE herald_registration r SET ` + cursorMoved("$4::bigint") + `, lease_owner = '', lease_until = NULL` + fencedBy("$3", "$4")
	sqlCheckpoint = `UPDATE herald_registration r SET ` + cursorMoved("$4::bigint") + fencedBy("$3", "$4")
	// sqlRetry and sqlPark: $17 not before; parked at the evidence's
	// instant ($3), which starts a run of failures (charged).
	sqlRetry = failed(charged + `, next_attempt_at = $17`)
	sqlPark  = failed(charged + `, parked = true, parked_at = $3`)
	charged  = `attempts = CASE WHEN $16::bigint > next_seq THEN 1 ELSE attempts + 1 END, host_failures = 0,
        failing_since = CASE WHEN $16::bigint > next_seq OR attempts = 0 THEN $3 ELSE failing_since END`
	// sqlHostFailed charges no attempt: $17 not before, $18 the host failures.
	sqlHostFailed = failed(`attempts = CASE WHEN $16::bigint > next_seq THEN 0 ELSE attempts END, host_failures = $18,
        next_attempt_at = $17`)
	// AdvanceBatch: sqlFence and sqlAdvance for many claims, sorted by key,
	// none twice. A custom plan of unnest cost more CPU than the statement:
	// sqlGenericPlans holds until the implicit transaction ends.
	sqlGenericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`
	sqlFenceBatch   = `SELECT u.ord, r.lease_owner, r.head
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u (stream, id, ord)
CROSS JOIN LATERAL (
    SELECT r.lease_owner, (SELECT s.head FROM herald_stream s WHERE s.stream = r.stream) AS head
    FROM herald_registration r
    WHERE r.stream = u.stream AND r.id = u.id
    FOR NO KEY UPDATE OF r) r
ORDER BY u.ord`
	sqlAdvanceBatch = `WITH u AS MATERIALIZED (
    SELECT u.ord, u.next_seq, r.tid
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS u (stream, id, owner, next_seq, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = u.stream AND r.id = u.id AND r.lease_owner = u.owner
          AND u.next_seq <= (SELECT s.head + 1 FROM herald_stream s WHERE s.stream = u.stream)
        OFFSET 0) r
)
UPDATE herald_registration r
SET ` + cursorMoved("u.next_seq") + `, lease_owner = '', lease_until = NULL
FROM u
WHERE r.ctid = ANY (ARRAY(SELECT tid FROM u)) AND r.ctid = u.tid
RETURNING u.ord`
	sqlComplete = `DELETE FROM herald_registration WHERE stream = $1 AND id = $2 AND lease_owner = $3`
	sqlUnpark   = `UPDATE herald_registration
SET parked = false, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = $3,
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	// sqlPause and sqlResume: registration $1/$2, at $3, the last error $4.
	sqlPause = `UPDATE herald_registration
SET parked = true, paused = true, parked_at = $3, last_error = $4, lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	sqlResume = `UPDATE herald_registration
SET parked = false, paused = false, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = $3,
    last_error = $4, lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	sqlMove = `UPDATE herald_registration
SET next_seq = $3, attempts = 0, host_failures = 0, next_attempt_at = $4, last_error = '',
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	// Both follow a lock of the registration's row.
	sqlInsertEvidence = insertEvidence + `
WHERE EXISTS (SELECT 1 FROM herald_registration WHERE stream = $1 AND id = $2)`
	sqlTrimEvidence = `DELETE FROM herald_evidence
WHERE stream = $1 AND registration = $2 AND n <= (
    SELECT n FROM herald_evidence WHERE stream = $1 AND registration = $2
    ORDER BY n DESC OFFSET $3 LIMIT 1)`
	sqlEvidence = `SELECT at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before
FROM herald_evidence WHERE stream = $1 AND registration = $2
ORDER BY n DESC LIMIT $3`
)

// insertEvidence's parameters $1…$14 are evidenceArgs'.
const insertEvidence = `INSERT INTO herald_evidence
    (stream, registration, at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before)
SELECT $1::text, $2::text, $3::timestamptz, $4::text, $5::bigint, $6::text, $7::text, $8::int, $9::int, $10::bytea,
       $11::text, $12::bigint, $13::text, $14::timestamptz`

// fencedBy is the WHERE clause of a write under a claim: the claim's owner
// still holds the lease, and the cursor is at most the stream's head + 1.
func fencedBy(owner, cursor string) string {
	return `
WHERE stream = $1 AND id = $2 AND lease_owner = ` + owner + `
  AND ` + cursor + `::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)`
}

// cursorMoved is what every cursor write under a claim sets: the cursor to
// next if that is forward, and the failure counts reset if it moved.
func cursorMoved(next string) string {
	return strings.ReplaceAll(`attempts = CASE WHEN NEW > r.next_seq THEN 0 ELSE r.attempts END,
    host_failures = CASE WHEN NEW > r.next_seq THEN 0 ELSE r.host_failures END,
    last_error = CASE WHEN NEW > r.next_seq THEN '' ELSE r.last_error END,
    next_seq = GREATEST(r.next_seq, NEW)`, "NEW", next)
}

// failed is the write of a turn that failed under a claim ($15 its owner,
// $16 the cursor reached), with its evidence if the UPDATE applied.
func failed(set string) string {
	return `WITH upd AS (
    UPDATE herald_registration
    SET ` + set + `,
        next_seq = GREATEST(next_seq, $16::bigint), last_error = $13,
        lease_owner = '', lease_until = NULL` + fencedBy("$15", "$16") + `
    RETURNING 1
)
` + insertEvidence + ` FROM upd`
}

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

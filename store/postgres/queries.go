package postgres

import "strings"

// Every SQL statement of the store, in one place. Parameters are numbered
// as the calling function passes them.

// The schema's version (migrate.go). sqlSchemaProbe returns the database's
// name, whether the version table ($1) exists, whether it has
// golang-migrate's shape, and whether any of herald's tables exist.
const (
	sqlSchemaProbe = `SELECT current_database(), to_regclass($1::text) IS NOT NULL,
       (SELECT count(*) = 2 FROM pg_attribute
        WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped
          AND ((attname = 'version' AND atttypid = 'bigint'::regtype)
            OR (attname = 'dirty' AND atttypid = 'boolean'::regtype))),
       to_regclass('herald_stream') IS NOT NULL OR to_regclass('herald_record') IS NOT NULL
    OR to_regclass('herald_registration') IS NOT NULL OR to_regclass('herald_evidence') IS NOT NULL`
	// golang-migrate keeps one row; none before the first migration.
	sqlCurrentVersion = `SELECT version, dirty FROM ` + versionTable + ` LIMIT 1`
	// The migration lock, an advisory lock of the database.
	migrationLockKey  = `hashtextextended('herald_schema_migrations', 0)`
	sqlMigrationLock  = `SELECT pg_advisory_xact_lock(` + migrationLockKey + `)`
	sqlCreateVersions = `CREATE TABLE IF NOT EXISTS ` + versionTable + ` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`
	sqlClearVersion   = `DELETE FROM ` + versionTable
	sqlRecordVersion  = `INSERT INTO ` + versionTable + ` (version, dirty) VALUES ($1, false)`
)

// The journal (journal.go). An append inserts into herald_record only; the
// sequencer (sequencer.go) numbers committed records in herald_seq. Readers
// see numbered records only.
const (
	sqlEnsureStream = `INSERT INTO herald_stream (stream) VALUES ($1) ON CONFLICT DO NOTHING`
	// Is the stream sealed: by a numbered final record (final_seq), or by a
	// final record not yet numbered (any final record: one that is refused
	// was refused because the stream is sealed).
	sqlSealState = `SELECT (SELECT final_seq FROM herald_stream WHERE stream = $1),
       EXISTS (SELECT 1 FROM herald_record WHERE stream = $1 AND final)`
	sqlLookupIDs = `SELECT r.id, r.stream, coalesce(q.seq, 0), r.kind, r.content_type, r.final, r.appended_at, r.traceparent, r.tracestate,
    r.digest, q.refused IS NOT NULL
FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = ANY($1::text[])`
	// The new records, in entry order (pos is assigned in the order rows
	// are inserted), in one statement with the checks: nothing is inserted
	// if the stream is sealed or an id is already stored; then the second
	// column is true and appendTx decides with the lookup. ON CONFLICT
	// skips an id that another transaction committed since this
	// statement's snapshot; then fewer ids come back. A concurrent append
	// of the same new id waits here, on the primary key, for that id only.
	sqlInsertRecords = `WITH seal AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM herald_stream WHERE stream = $1 AND final_seq IS NOT NULL)
        OR EXISTS (SELECT 1 FROM herald_record WHERE stream = $1 AND final)
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
	// sqlInsertRecord is sqlInsertRecords for one entry, the common case:
	// the record's row, its primary key and work-list entries, nothing
	// else. With one id the id probe is ON CONFLICT's: no row inserted
	// means the stream is sealed or the id is stored (committed before
	// this statement or, after a wait on the primary key, by a concurrent
	// append); appendTx's lookup decides which, as for sqlInsertRecords'
	// blocked. The two seal probes are one subquery (one init-plan), each
	// an index range that is empty for an open stream: herald_stream_sealed
	// and herald_record_final.
	sqlInsertRecord = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
SELECT $1::text, $2::text, $3::text, $4::text, $5::bytea, $6::boolean, $7::bytea, $8::timestamptz, $9::text, $10::text
WHERE NOT EXISTS (SELECT FROM herald_stream WHERE stream = $1 AND final_seq IS NOT NULL
    UNION ALL SELECT FROM herald_record WHERE stream = $1 AND final)
ON CONFLICT (id) DO NOTHING`
	sqlUndoInsert = `DELETE FROM herald_record WHERE id = ANY($1::text[])`
	sqlSeqsOf     = `SELECT r.id, coalesce(q.seq, 0), q.refused IS NOT NULL FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id
WHERE r.id = ANY($1::text[])`
	sqlRead = `SELECT q.seq, r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate
FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.stream = $1 AND q.seq >= $2 ORDER BY q.seq LIMIT $3`
	sqlHead      = `SELECT head FROM herald_stream WHERE stream = $1`
	sqlFinalSeq  = `SELECT coalesce(final_seq, 0) FROM herald_stream WHERE stream = $1`
	sqlLookupCol = `r.stream, coalesce(q.seq, 0), r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate
FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = $1`
	// Lookup reads numbered records only; an append's conflict report
	// reads any.
	sqlLookup    = `SELECT ` + sqlLookupCol + ` AND q.seq IS NOT NULL`
	sqlLookupAny = `SELECT ` + sqlLookupCol
	sqlRefused   = `SELECT q.stream, q.id, r.kind, r.appended_at, q.refused FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.refused IS NOT NULL AND ($1::text = '' OR q.stream = $1)
ORDER BY q.stream, r.pos LIMIT $2`
)

// The sequencer (sequencer.go). One step is one transaction holding the
// advisory lock sequencerLock, sent in one round trip (BEGIN, the lock, the
// numbering, COMMIT); see the package documentation, "Appending".
var (
	sqlAnyUnsequenced = `SELECT EXISTS (` + waitingRunning("r.id", "true", "") + `) OR EXISTS (` + waitingNew("r.id", "true", "LIMIT 1") + `)`
	sqlBegin          = `BEGIN ISOLATION LEVEL READ COMMITTED`
	// The lock, tried or waited for; whether this step holds it is kept in a
	// transaction-local setting that the statements after read. Those are
	// statements of their own, so their snapshots are taken after the lock
	// was granted and see everything the previous holder committed.
	sqlTryLock  = `SELECT set_config('herald.sequencer', pg_try_advisory_xact_lock($1)::text, true) = 'true'`
	sqlWaitLock = `SELECT pg_advisory_xact_lock($1)`
	sqlHeld     = `SELECT set_config('herald.sequencer', 'true', true) = 'true'`
	sqlCommit   = `COMMIT`
	sqlAbort    = `ROLLBACK`
	// sqlNumber is the step. Its window (win) is the snapshot of the step
	// that opened it, this statement's own (pg_current_snapshot) unless a
	// full page left one open: it numbers the records whose transaction
	// committed in win and not in done, in (xid, pos) order, after the
	// last record an earlier page of the window numbered. A READ COMMITTED
	// statement sees every transaction that its own or an earlier snapshot
	// saw committed, and none running. Of them the first $1 (page), and,
	// when the page is full, the rest of the streams whose final record it
	// holds, so that a final record is numbered after every record
	// committed with it (cand; the rows of herald_seq keep the next pages
	// from numbering those again). Per stream, non-final records first and
	// then the first final record get head+1… (rank r <= n); a second
	// final record is refused, and so is every record of a stream already
	// sealed (ranked). Only the sequencer, which holds the lock, moves a
	// head or seals, so the snapshot's heads are the rows'. The stream rows'
	// UPDATE moves the heads, seals, and sets the pending marker under the
	// rows' locks; a stream without a row in the snapshot gets one from an
	// upsert (Register may have created it since, with head 0). A page that
	// is not full closes the window: done becomes win. One notification
	// (payload how many) if any record was numbered. It returns the
	// page's size, and how many it numbered and refused.
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

// Registrations (registrations.go). regColumns and statusColumns are what
// scanStatus reads, in order.
const (
	regColumns = `r.stream, r.id, r.namespace, r.url, r.config, r.on_rejected, r.next_seq, r.attempts,
       r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until, r.host_failures, r.kinds, r."window"`
	statusColumns = regColumns + `, s.head, s.final_seq IS NOT NULL`

	// Lock the stream row first (the append's lock order) and set the
	// pending marker: a new registration may lag.
	sqlMarkStream         = `UPDATE herald_stream SET pending = true WHERE stream = $1 RETURNING head, final_seq, oldest_seq`
	sqlRegistrationExists = `SELECT EXISTS (SELECT 1 FROM herald_registration WHERE stream = $1 AND id = $2)`
	sqlUpsertRegistration = `INSERT INTO herald_registration AS r
    (stream, id, namespace, url, config, on_rejected, next_seq, next_attempt_at, host, kinds, "window")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (stream, id) DO UPDATE
SET namespace = excluded.namespace, url = excluded.url, config = excluded.config, on_rejected = excluded.on_rejected,
    host = excluded.host, kinds = excluded.kinds, "window" = excluded."window"
RETURNING ` + regColumns
	sqlDeleteRegistration = `DELETE FROM herald_registration WHERE stream = $1 AND id = $2`
	sqlGet                = `SELECT ` + statusColumns + `
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = $1 AND r.id = $2`
	sqlList = `SELECT ` + statusColumns + `
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE ($1::text = '' OR r.stream = $1) AND ($2::text = '' OR r.namespace = $2)
  AND (NOT $3::boolean OR r.parked) AND (NOT $4::boolean OR r.next_seq <= s.head)
  AND (r.stream, r.id) > ($5::text, $6::text)
ORDER BY r.stream, r.id
LIMIT $7`
	sqlStatsNamespaces = `SELECT r.namespace,
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts = 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq <= s.head AND r.attempts > 0),
    count(*) FILTER (WHERE NOT r.parked AND r.next_seq > s.head),
    count(*) FILTER (WHERE r.parked),
    count(*) FILTER (WHERE r.lease_until > $1),
    coalesce(sum(GREATEST(s.head - r.next_seq + 1, 0)), 0)::bigint
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
GROUP BY r.namespace`
	sqlStatsLagging = `SELECT ` + statusColumns + `
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.next_seq <= s.head
ORDER BY s.head - r.next_seq DESC, r.stream, r.id
LIMIT $1`
	sqlStatsOldestParked = `SELECT ` + statusColumns + `
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.parked
ORDER BY r.parked_at, r.stream, r.id
LIMIT 1`
)

// Due (due.go): the pending-marker design is in the package documentation.
//
// Every probe of herald_registration here is a subquery per pending stream
// (or per candidate) behind OFFSET 0, which keeps the planner from turning
// it into a hash join over the whole table: the cost of a sweep follows the
// pending streams, whatever the statistics say about them.
const (
	// Every table Due reads has the index it needs, and the planner's
	// statistics lag the pending markers (they flip on every append and
	// sweep): if they still count many pending streams, it would scan
	// herald_stream whole, and JIT-compile for its inflated estimates
	// (tens of milliseconds). And every statement runs on its generic
	// plan, made once per connection: the joins are fixed by the OFFSET 0
	// probes above, whatever the values, and sqlClearPending, whose custom
	// plans of ANY($1) looked cheaper, was planned anew on 64-80% of its
	// calls (issue 15, in the history of BENCHMARKS.md). The settings last
	// until the transaction ends.
	sqlDuePlanner1 = `SET LOCAL enable_seqscan = off`
	sqlDuePlanner2 = `SET LOCAL jit = off`
	sqlDuePlanner3 = `SET LOCAL plan_cache_mode = force_generic_plan`
	// A claim's commit does not wait for its WAL flush (package doc,
	// "Claiming and fencing": a claim a crash loses is a lease lost), so
	// that the stream rows it locks to clear their markers, which the
	// sequencer's step updates, are released when it commits, not a flush
	// later, and the turns start a flush sooner.
	sqlDueAsyncCommit = `SET LOCAL synchronous_commit = off`
	// The streams whose marker may be cleared, locked in the append's order
	// (stream row first). SKIP LOCKED: a stream being appended to keeps its
	// marker this sweep. At most 10,000 a sweep, to bound the transaction:
	// more than that many streams appended to since the last sweep and
	// followed by nobody leave the rest for the next. The NOT EXISTS here
	// reads a snapshot taken before the locks; sqlClearPending decides, with
	// one taken after. The streams locked are kept in a transaction-local
	// setting for sqlClearPending, so that both go in one round trip with
	// the commit (the rows stay locked only that long).
	sqlClearCandidates = `SELECT set_config('herald.idle', coalesce(array_agg(c.stream), '{}')::text, true)
FROM (SELECT s.stream FROM herald_stream s
    WHERE s.pending AND NOT EXISTS (
        SELECT 1 FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
        OFFSET 0)
    LIMIT 10000
    FOR NO KEY UPDATE OF s SKIP LOCKED) c`
	sqlClearPending = `UPDATE herald_stream s SET pending = false
WHERE s.stream = ANY(current_setting('herald.idle')::text[]) AND NOT EXISTS (
    SELECT 1 FROM herald_registration r
    WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
    OFFSET 0)`
	// Claim: the due registrations of pending streams, oldest attempt first
	// (due); each locked in that order unless another transaction holds it
	// (SKIP LOCKED, never waiting), until Limit+1 are locked (locked); the
	// first Limit stamped with the lease and next_attempt_at = at (claimed),
	// so that the least recently claimed go first next time and a saturated
	// namespace starves no registration. They come back in the order they
	// were due (locked's next_attempt_at, before the stamp). The lock
	// re-checks the lease and parking on the row's newest version.
	//
	// The per-host cap ($6 MaxPerHost, NULL for none; $7/$8 the hosts and
	// counts of Busy) drops, before locking, every due row past its host's
	// room: rank within its host, oldest first, over MaxPerHost - busy. A
	// row dropped so is neither claimed nor counted towards More.
	sqlClaim = `WITH cand AS MATERIALIZED (
    SELECT c.stream, c.id, c.next_attempt_at, c.host
    FROM herald_stream s
    CROSS JOIN LATERAL (
        SELECT r.stream, r.id, r.next_attempt_at, r.host FROM herald_registration r
        WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
          AND r.namespace = $1 AND r.next_attempt_at <= $2
          AND (r.lease_until IS NULL OR r.lease_until <= $2)
          AND r.host <> ALL($10::text[])
        OFFSET 0) c
    WHERE s.pending
), due AS MATERIALIZED (
    SELECT c.stream, c.id, c.next_attempt_at
    FROM (SELECT cand.*, row_number() OVER (PARTITION BY cand.host ORDER BY cand.next_attempt_at, cand.stream, cand.id) AS host_rank
          FROM cand) c
    LEFT JOIN unnest($7::text[], $8::int[]) AS b (host, busy) ON b.host = c.host
    WHERE ($6::int IS NULL OR c.host_rank <= $6::int - coalesce(b.busy, 0))
      AND (c.host <> ALL($9::text[]) OR c.host_rank = 1)
    ORDER BY c.next_attempt_at, c.stream, c.id
), locked AS MATERIALIZED (
    SELECT l.tid, d.next_attempt_at, d.stream, d.id
    FROM due d
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = d.stream AND r.id = d.id AND NOT r.parked
          AND r.next_attempt_at <= $2 AND (r.lease_until IS NULL OR r.lease_until <= $2)
        FOR NO KEY UPDATE SKIP LOCKED) l
    LIMIT $3::int
), claimed AS (
    UPDATE herald_registration r SET lease_owner = $4, lease_until = $5, next_attempt_at = $2
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM locked))
    RETURNING r.*
)
SELECT ` + statusColumns + `,
    (SELECT count(*) FROM (SELECT 1 FROM due LIMIT $3::int + 1) d) - (SELECT count(*) FROM locked)
FROM claimed r
JOIN locked l ON l.stream = r.stream AND l.id = r.id
CROSS JOIN LATERAL (SELECT s.head, s.final_seq FROM herald_stream s WHERE s.stream = r.stream OFFSET 0) s
ORDER BY l.next_attempt_at, r.stream, r.id`
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
)

// Host health (hosts.go, and Due's probes in due.go). The rules are push's;
// these statements keep their results. Lock order: a registration's row
// before its host's (HostFailed); Due locks host rows with SKIP LOCKED only,
// so it never waits on them.
const (
	hostColumns = `host, state, since, failures, probes, next_probe_at, last_error, last_failure_at`
	// The hosts whose probe is due at $1, locked: this claim owns their
	// probe. SKIP LOCKED: a host another claim is probing is not ours; once
	// that claim commits its next probe instant has moved.
	sqlLockProbes = `SELECT ` + hostColumns + ` FROM herald_host
WHERE state <> 'up' AND next_probe_at <= $1
ORDER BY host
FOR NO KEY UPDATE SKIP LOCKED`
	// The troubled hosts (push.Host.Troubled), read before the claim: the
	// registrations of those not up are held, but for the probes this claim
	// owns (an array parameter of the claim: comparing with a few hosts
	// costs a held row less than a lookup of its host), and those of the
	// claimed registrations go back to the worker.
	sqlTroubledHosts = `SELECT ` + hostColumns + ` FROM herald_host WHERE state <> 'up' OR failures > 0`
	// The probe claimed: the next one, in the claim's transaction.
	sqlMoveProbe  = `UPDATE herald_host SET probes = $2, next_probe_at = $3 WHERE host = $1`
	sqlEnsureHost = `INSERT INTO herald_host (host, state, since) VALUES ($1, 'up', $2) ON CONFLICT DO NOTHING`
	sqlLockHost   = `SELECT ` + hostColumns + ` FROM herald_host WHERE host = $1 FOR NO KEY UPDATE`
	sqlPutHost    = `UPDATE herald_host SET state = $2, since = $3, failures = $4, probes = $5, next_probe_at = $6,
    last_error = $7, last_failure_at = $8
WHERE host = $1`
	// A host-level failure: the registration's turn ends with no attempt
	// charged. $1…$14 are evidenceArgs', $15 the claim's owner, $16 the
	// cursor reached, $17 not before, $18 its host failures.
	sqlHostFailed = `WITH upd AS (
    UPDATE herald_registration
    SET attempts = CASE WHEN $16::bigint > next_seq THEN 0 ELSE attempts END, host_failures = $18,
        next_seq = GREATEST(next_seq, $16::bigint),
        next_attempt_at = $17, last_error = $13,
        lease_owner = '', lease_until = NULL
    WHERE stream = $1 AND id = $2 AND lease_owner = $15
      AND $16::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)
    RETURNING 1
)
` + insertEvidence + ` FROM upd`
	// Hosts with their held registrations counted: one pass over the
	// lagging registrations of the hosts not up (none when all are up).
	sqlHosts = `WITH held AS (
    SELECT r.host, count(*) AS n
    FROM herald_registration r
    JOIN herald_host d ON d.host = r.host AND d.state <> 'up'
    JOIN herald_stream s ON s.stream = r.stream
    WHERE NOT r.parked AND r.next_seq <= s.head
    GROUP BY r.host
)
SELECT h.host, h.state, h.since, h.failures, h.probes, h.next_probe_at, h.last_error, h.last_failure_at,
    coalesce(held.n, 0)
FROM herald_host h LEFT JOIN held ON held.host = h.host
WHERE ($1::text = '' OR h.host = $1) AND ($2::text = '' OR h.state = $2) AND h.host > $3
ORDER BY h.host
LIMIT $4`
)

// Cursors, failures, operator moves and evidence (cursor.go).
//
// The writes made under a claim (sqlAdvance, sqlCheckpoint, sqlRetry,
// sqlPark, sqlComplete) are fenced: each follows sqlFence in the same implicit
// transaction, and applies only where lease_owner is still the claim's
// owner ($3, or $15 after the evidence parameters) and, for a cursor, where
// it is at most the stream's head + 1.
const (
	sqlFence = `SELECT r.lease_owner, s.head, r.next_seq, r.host_failures
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = $1 AND r.id = $2
FOR NO KEY UPDATE OF r`
	// cursorFence fences sqlAdvance and sqlCheckpoint: the claim's owner
	// $3, a cursor $4 at most the stream's head + 1.
	cursorFence = `
WHERE stream = $1 AND id = $2 AND lease_owner = $3
  AND $4::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)`
	// AdvanceBatch (advancebatch.go): sqlFence and sqlAdvance for many
	// claims ($1 streams, $2 ids, $3 owners, $4 cursors; no key twice,
	// sorted by key), in one implicit transaction. The fence locks the rows
	// in the arrays' order, so that two batches never lock in a cycle, and
	// returns each found claim's ordinality with its lease owner and its
	// stream's head; the UPDATE returns the ordinality of each claim it
	// applied. Every row is found by its key (the fence) or its tuple id
	// (the UPDATE, under the fence's lock) whatever the planner's
	// statistics say: a batch costs its rows, not the table.
	//
	// sqlGenericPlans comes first in the batch: PostgreSQL plans a prepared
	// statement anew on each call (a custom plan) when the plans it made
	// for the arrays' values cost less than the generic one, and a custom
	// plan of unnest knows the arrays' length where the generic one
	// assumes 10: so it planned both statements of every batch, ~0.5 ms
	// of CPU each, more than they took to run (issue 15, in the history of
	// BENCHMARKS.md). The generic plans are the same joins by key and tuple
	// id. The setting ends with the implicit transaction.
	sqlGenericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`
	sqlFenceBatch   = `SELECT u.ord, r.lease_owner, r.head
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u (stream, id, ord)
CROSS JOIN LATERAL (
    SELECT r.lease_owner, (SELECT s.head FROM herald_stream s WHERE s.stream = r.stream) AS head
    FROM herald_registration r
    WHERE r.stream = u.stream AND r.id = u.id
    FOR NO KEY UPDATE OF r) r
ORDER BY u.ord`
	sqlAdvanceBatchWith = `WITH u AS MATERIALIZED (
    SELECT u.ord, u.next_seq, r.tid
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS u (stream, id, owner, next_seq, ord)
    CROSS JOIN LATERAL (
        SELECT r.ctid AS tid FROM herald_registration r
        WHERE r.stream = u.stream AND r.id = u.id AND r.lease_owner = u.owner
          AND u.next_seq <= (SELECT s.head + 1 FROM herald_stream s WHERE s.stream = u.stream)
        OFFSET 0) r
)
UPDATE herald_registration r
SET `
	sqlAdvanceBatchEnd = `, lease_owner = '', lease_until = NULL
FROM u
WHERE r.ctid = ANY (ARRAY(SELECT tid FROM u)) AND r.ctid = u.tid
RETURNING u.ord`
	// insertEvidence's parameters $1…$14 are evidenceArgs'. sqlRetry and
	// sqlPark insert it only if their UPDATE applied (FROM upd), and store
	// its error ($13) as last_error; the parameters of the UPDATE follow.
	insertEvidence = `INSERT INTO herald_evidence
    (stream, registration, at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before)
SELECT $1::text, $2::text, $3::timestamptz, $4::text, $5::bigint, $6::text, $7::text, $8::int, $9::int, $10::bytea,
       $11::text, $12::bigint, $13::text, $14::timestamptz`
	// $15 the claim's owner, $16 the cursor reached, $17 not before.
	sqlRetry = `WITH upd AS (
    UPDATE herald_registration
    SET attempts = CASE WHEN $16::bigint > next_seq THEN 1 ELSE attempts + 1 END, host_failures = 0,
        next_seq = GREATEST(next_seq, $16::bigint),
        next_attempt_at = $17, last_error = $13,
        lease_owner = '', lease_until = NULL
    WHERE stream = $1 AND id = $2 AND lease_owner = $15
      AND $16::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)
    RETURNING 1
)
` + insertEvidence + ` FROM upd`
	// $15 the claim's owner, $16 the cursor reached; parked at the
	// evidence's instant ($3).
	sqlPark = `WITH upd AS (
    UPDATE herald_registration
    SET attempts = CASE WHEN $16::bigint > next_seq THEN 1 ELSE attempts + 1 END, host_failures = 0,
        next_seq = GREATEST(next_seq, $16::bigint),
        parked = true, parked_at = $3, last_error = $13,
        lease_owner = '', lease_until = NULL
    WHERE stream = $1 AND id = $2 AND lease_owner = $15
      AND $16::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)
    RETURNING 1
)
` + insertEvidence + ` FROM upd`
	sqlRegistrationForEvent = `SELECT namespace, url, next_attempt_at FROM herald_registration WHERE stream = $1 AND id = $2`
	sqlComplete             = `DELETE FROM herald_registration WHERE stream = $1 AND id = $2 AND lease_owner = $3`
	sqlLockRegistration     = `SELECT next_seq, parked FROM herald_registration
WHERE stream = $1 AND id = $2 FOR NO KEY UPDATE`
	sqlLockStreamHead = `SELECT head FROM herald_stream WHERE stream = $1 FOR NO KEY UPDATE`
	sqlSetPending     = `UPDATE herald_stream SET pending = true WHERE stream = $1`
	sqlUnpark         = `UPDATE herald_registration
SET parked = false, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = $3,
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	// An operator's move clears the lease: a turn in flight can no longer
	// write (its fenced statements find another owner).
	sqlMove = `UPDATE herald_registration
SET next_seq = $3, attempts = 0, host_failures = 0, next_attempt_at = $4, last_error = '',
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	// Evidence goes in only if its registration exists; the trim then keeps
	// the newest $3. Both run after the registration's row was locked in the
	// same transaction, so concurrent writers cannot leave more.
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

// cursorMoved is what every cursor write under a claim sets (sqlAdvance,
// sqlCheckpoint, sqlAdvanceBatch): the cursor to the new value if that is
// forward, and the failure counts reset if it moved. One text, so that the
// single and the batched writes never differ.
const cursorMovedTo = `attempts = CASE WHEN NEW > r.next_seq THEN 0 ELSE r.attempts END,
    host_failures = CASE WHEN NEW > r.next_seq THEN 0 ELSE r.host_failures END,
    last_error = CASE WHEN NEW > r.next_seq THEN '' ELSE r.last_error END,
    next_seq = GREATEST(r.next_seq, NEW)`

var (
	cursorMoved      = strings.ReplaceAll(cursorMovedTo, "NEW", "$4::bigint")
	cursorMovedBatch = strings.ReplaceAll(cursorMovedTo, "NEW", "u.next_seq")
	sqlAdvance       = `UPDATE herald_registration r SET ` + cursorMoved + `, lease_owner = '', lease_until = NULL` + cursorFence
	sqlCheckpoint    = `UPDATE herald_registration r SET ` + cursorMoved + cursorFence
	sqlAdvanceBatch  = sqlAdvanceBatchWith + cursorMovedBatch + sqlAdvanceBatchEnd
)

// Retention (retention.go). Each stream is pruned in a transaction of its
// own that locks its row first (the lock order of appends, registrations and
// operator moves, so no cursor can move below the new low-water mark while
// it is computed); SKIP LOCKED leaves a stream being appended to for the
// next pass.
var (
	sqlOldest          = `SELECT oldest_seq FROM herald_stream WHERE stream = $1`
	sqlPruneCandidates = `SELECT stream FROM herald_stream WHERE stream >= $1 ORDER BY stream LIMIT $2`
	sqlPruneLock       = `SELECT head, final_seq IS NOT NULL, oldest_seq FROM herald_stream WHERE stream = $1
FOR NO KEY UPDATE SKIP LOCKED`
	sqlPruneLow = `SELECT min(next_seq), count(*) FROM herald_registration WHERE stream = $1`
	// Records the sequencer refused (they raced their stream's final
	// record) stay for an operator to see for the retention age.
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
	// A sealed, completed stream goes only once nothing of it is left: no
	// record, refused ones included, and none waiting for the sequencer
	// (removing it would let those start a new stream of the same name).
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
	sqlStreams = `SELECT s.stream, s.head, s.final_seq IS NOT NULL, s.oldest_seq,
    (SELECT count(*) FROM herald_registration r WHERE r.stream = s.stream),
    (SELECT coalesce(sum(length(x.payload)), 0) FROM herald_seq q JOIN herald_record x ON x.id = q.id
     WHERE q.stream = s.stream AND q.seq >= s.oldest_seq)
FROM herald_stream s
WHERE ($1::text = '' OR s.stream = $1) AND s.stream > $2
ORDER BY s.stream
LIMIT $3`
)

// waitingRunning and waitingNew select cols of the records waiting for the
// sequencer that satisfy cond, given st, the row of herald_sequencer: the
// records of the transactions running at its snapshot done (one index
// probe each) and of those that began after it (one index range, in
// (xid, pos) order, then limit). A statement sees the committed ones; a
// record of a transaction that done saw committed, or aborted, is not among
// them. Each probe of herald_record is a subquery of its own, so that the
// planner, which cannot estimate a snapshot's transactions, keeps to the
// index.
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
// (after: its xid, pos) that satisfy cond and are not numbered yet, in
// (xid, pos) order, at most limit from each part of waitingRunning and
// waitingNew.
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

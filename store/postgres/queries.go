package postgres

// Every SQL statement of the store, in one place. Parameters are numbered
// as the calling function passes them.

// Schema probes (migrate.go). They change nothing. sqlSchemaProbe returns
// the database's name, whether the version table ($1) exists, whether it
// has golang-migrate's shape, and whether any of herald's tables exist.
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
)

// The journal (journal.go).
const (
	sqlEnsureStream = `INSERT INTO herald_stream (stream) VALUES ($1) ON CONFLICT DO NOTHING`
	// The per-stream lock that orders appends: held until the appending
	// transaction ends. NO KEY UPDATE, as an UPDATE takes: it does not block
	// the KEY SHARE locks of foreign-key checks.
	sqlLockStream = `SELECT head, final_seq FROM herald_stream WHERE stream = $1 FOR NO KEY UPDATE`
	sqlLookupIDs  = `SELECT id, stream, seq, kind, content_type, final, appended_at, digest
FROM herald_record WHERE id = ANY($1::text[])`
	// Insert the new records at head+1… and move the head, set the pending
	// marker and seal, all in one statement. ON CONFLICT skips an id that
	// another stream's append committed since the lookup; then the count
	// differs, the head does not move and no row comes back (see appendTx).
	sqlInsertRecordsBase = `WITH ins AS (
    INSERT INTO herald_record (stream, seq, id, kind, content_type, payload, final, digest, appended_at)
    SELECT $1, $2::bigint + u.ord, u.id, u.kind, u.content_type, u.payload, u.final, u.digest, $9
    FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[], $7::boolean[], $8::bytea[])
         WITH ORDINALITY AS u (id, kind, content_type, payload, final, digest, ord)
    ON CONFLICT (id) DO NOTHING
    RETURNING 1
)
UPDATE herald_stream
SET head = $2::bigint + $10::bigint,
    final_seq = CASE WHEN $11::boolean THEN $2::bigint + $10::bigint END,
    pending = true
WHERE stream = $1 AND (SELECT count(*) FROM ins) = $10::bigint
RETURNING head`
	sqlInsertRecords = sqlInsertRecordsBase
	// The notification is queued by the statement and sent by PostgreSQL
	// when, and only if, the transaction commits.
	sqlInsertRecordsNotify = sqlInsertRecordsBase + `, pg_notify('` + NotifyChannel + `', stream)`
	sqlUndoInsert          = `DELETE FROM herald_record WHERE stream = $1 AND seq > $2`
	sqlRead                = `SELECT seq, id, kind, content_type, payload, final, appended_at
FROM herald_record WHERE stream = $1 AND seq >= $2 ORDER BY seq LIMIT $3`
	sqlHead   = `SELECT head FROM herald_stream WHERE stream = $1`
	sqlLookup = `SELECT stream, seq, id, kind, content_type, payload, final, appended_at
FROM herald_record WHERE id = $1`
)

// Registrations (registrations.go). regColumns and statusColumns are what
// scanStatus reads, in order.
const (
	regColumns = `r.stream, r.id, r.namespace, r.url, r.config, r.on_rejected, r.next_seq, r.attempts,
       r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until`
	statusColumns = regColumns + `, s.head, s.final_seq IS NOT NULL`

	// Lock the stream row first (the append's lock order) and set the
	// pending marker: a new registration may lag.
	sqlMarkStream         = `UPDATE herald_stream SET pending = true WHERE stream = $1 RETURNING head, final_seq`
	sqlRegistrationExists = `SELECT EXISTS (SELECT 1 FROM herald_registration WHERE stream = $1 AND id = $2)`
	sqlUpsertRegistration = `INSERT INTO herald_registration AS r
    (stream, id, namespace, url, config, on_rejected, next_seq, next_attempt_at, host)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (stream, id) DO UPDATE
SET namespace = excluded.namespace, url = excluded.url, config = excluded.config, on_rejected = excluded.on_rejected,
    host = excluded.host
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
	// (tens of milliseconds). Both settings last until the transaction ends.
	sqlDuePlanner1 = `SET LOCAL enable_seqscan = off`
	sqlDuePlanner2 = `SET LOCAL jit = off`
	// The streams whose marker may be cleared, locked in the append's order
	// (stream row first). SKIP LOCKED: a stream being appended to keeps its
	// marker this sweep. At most 10,000 a sweep, to bound the transaction:
	// more than that many streams appended to since the last sweep and
	// followed by nobody leave the rest for the next. The NOT EXISTS here reads a snapshot taken before
	// the locks; sqlClearPending decides, with one taken after.
	sqlClearCandidates = `SELECT s.stream FROM herald_stream s
WHERE s.pending AND NOT EXISTS (
    SELECT 1 FROM herald_registration r
    WHERE r.stream = s.stream AND NOT r.parked AND r.next_seq <= s.head
    OFFSET 0)
LIMIT 10000
FOR NO KEY UPDATE OF s SKIP LOCKED`
	sqlClearPending = `UPDATE herald_stream s SET pending = false
WHERE s.stream = ANY($1::text[]) AND NOT EXISTS (
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
        OFFSET 0) c
    WHERE s.pending
), due AS MATERIALIZED (
    SELECT c.stream, c.id, c.next_attempt_at
    FROM (SELECT cand.*, row_number() OVER (PARTITION BY cand.host ORDER BY cand.next_attempt_at, cand.stream, cand.id) AS host_rank
          FROM cand) c
    LEFT JOIN unnest($7::text[], $8::int[]) AS b (host, busy) ON b.host = c.host
    WHERE $6::int IS NULL OR c.host_rank <= $6::int - coalesce(b.busy, 0)
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
    OFFSET 0) c
WHERE s.pending`
)

// Cursors, failures, operator moves and evidence (cursor.go).
//
// The writes made under a claim (sqlAdvance, sqlRetry, sqlPark,
// sqlComplete) are fenced: each follows sqlFence in the same implicit
// transaction, and applies only where lease_owner is still the claim's
// owner ($3, or $15 after the evidence parameters) and, for a cursor, where
// it is at most the stream's head + 1.
const (
	sqlFence = `SELECT r.lease_owner, s.head
FROM herald_registration r JOIN herald_stream s ON s.stream = r.stream
WHERE r.stream = $1 AND r.id = $2
FOR NO KEY UPDATE OF r`
	sqlAdvance = `UPDATE herald_registration
SET attempts = CASE WHEN $4::bigint > next_seq THEN 0 ELSE attempts END,
    last_error = CASE WHEN $4::bigint > next_seq THEN '' ELSE last_error END,
    next_seq = GREATEST(next_seq, $4::bigint),
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2 AND lease_owner = $3
  AND $4::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)`
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
    SET attempts = CASE WHEN $16::bigint > next_seq THEN 1 ELSE attempts + 1 END,
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
    SET attempts = CASE WHEN $16::bigint > next_seq THEN 1 ELSE attempts + 1 END,
        next_seq = GREATEST(next_seq, $16::bigint),
        parked = true, parked_at = $3, last_error = $13,
        lease_owner = '', lease_until = NULL
    WHERE stream = $1 AND id = $2 AND lease_owner = $15
      AND $16::bigint <= (SELECT head + 1 FROM herald_stream WHERE stream = $1)
    RETURNING 1
)
` + insertEvidence + ` FROM upd`
	sqlComplete         = `DELETE FROM herald_registration WHERE stream = $1 AND id = $2 AND lease_owner = $3`
	sqlLockRegistration = `SELECT next_seq, parked FROM herald_registration
WHERE stream = $1 AND id = $2 FOR NO KEY UPDATE`
	sqlLockStreamHead = `SELECT head FROM herald_stream WHERE stream = $1 FOR NO KEY UPDATE`
	sqlSetPending     = `UPDATE herald_stream SET pending = true WHERE stream = $1`
	sqlUnpark         = `UPDATE herald_registration
SET parked = false, parked_at = NULL, attempts = 0, next_attempt_at = $3,
    lease_owner = '', lease_until = NULL
WHERE stream = $1 AND id = $2`
	// An operator's move clears the lease: a turn in flight can no longer
	// write (its fenced statements find another owner).
	sqlMove = `UPDATE herald_registration
SET next_seq = $3, attempts = 0, next_attempt_at = $4, last_error = '',
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

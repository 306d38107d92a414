package sqlite

// Every SQL statement of the store, but for List's, built at run time, and
// the migration runner's bookkeeping (open.go). Parameters are ? in the
// order the caller passes them, or ?N where a statement uses one twice.

// Schema probes and the file's settings (open.go).
const (
	sqlApplicationID = "PRAGMA application_id"
	sqlUserVersion   = "PRAGMA user_version"
	sqlTableNames    = "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
	// golang-migrate's table keeps one row; none before the first migration.
	sqlCurrentVersion = "SELECT version, dirty FROM " + migrationsTable + " LIMIT 1"
	sqlAutoVacuum     = "PRAGMA auto_vacuum = INCREMENTAL"
	sqlWAL            = "PRAGMA journal_mode = WAL"
)

// The journal (journal.go).
const (
	recordColumns   = "stream, seq, id, kind, content_type, payload, final, appended_at, traceparent, tracestate"
	sqlLookupDigest = "SELECT stream, seq, digest, appended_at, traceparent, tracestate FROM herald_record WHERE id = ?"
	sqlHeadSealed   = "SELECT head, sealed FROM herald_stream WHERE stream = ?"
	sqlUpsertHead   = `
		INSERT INTO herald_stream (stream, head, sealed, wake_at)
		VALUES (?1, ?2, ?3, CASE WHEN EXISTS (SELECT 1 FROM herald_registration WHERE stream = ?1) THEN ?4 END)
		ON CONFLICT (stream) DO UPDATE SET
			head = excluded.head,
			sealed = excluded.sealed,
			wake_at = IFNULL(excluded.wake_at, herald_stream.wake_at)`
	sqlInsertRecord = `
		INSERT INTO herald_record (stream, seq, id, kind, content_type, payload, final, appended_at, digest, traceparent, tracestate)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// A page (journal.Journal.Read): the records from ?2 to the last seq of
	// the first ?3 whose running payload total is within ?4, the first
	// whatever its size. length(payload) reads a blob's size from its
	// record header, not the blob: the bound costs an index range of at most
	// ?3 entries, and only the page's payloads are read.
	sqlRead = "SELECT " + recordColumns + ` FROM herald_record WHERE stream = ?1 AND seq >= ?2 AND seq <= (
		SELECT max(seq) FROM (
			SELECT seq, row_number() OVER w AS n, sum(size) OVER w AS total
			FROM (SELECT seq, length(payload) AS size FROM herald_record WHERE stream = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3)
			WINDOW w AS (ORDER BY seq ROWS UNBOUNDED PRECEDING))
		WHERE n = 1 OR total <= ?4)
		ORDER BY seq`
	sqlHead   = "SELECT IFNULL(MAX(head), 0) FROM herald_stream WHERE stream = ?" // one row, 0 for no stream
	sqlLookup = "SELECT " + recordColumns + " FROM herald_record WHERE id = ?"
)

// Registrations (registrations.go).
const (
	// statusColumns select a registration joined with its stream (aliases r,
	// s), in the order scanStatus reads them.
	statusColumns = `r.stream, r.id, r.namespace, r.url,
	IFNULL(r.config, (SELECT u.config FROM herald_subscription AS u WHERE u.prefix = r.subscription AND u.id = r.id)), r.on_rejected, r.next_seq, r.attempts,
	r.next_attempt_at, r.parked, r.parked_at, r.last_error, r.lease_owner, r.lease_until, r.kinds, s.head, s.sealed, r.host_failures, r."window",
	r.retain_max_ns, r.subscription, r.retry, r.failing_since, r.paused, r.rate, r.paced_until`
	statusFrom      = ` FROM herald_registration AS r JOIN herald_stream AS s ON s.stream = r.stream `
	sqlGet          = "SELECT " + statusColumns + statusFrom + "WHERE r.stream = ? AND r.id = ?"
	sqlEnsureStream = "INSERT INTO herald_stream (stream) VALUES (?) ON CONFLICT DO NOTHING"
	// The rate removed (a stored one, ?10 ''), its pace goes, and one that waited for it
	// alone is due at once (Store.Register).
	sqlUpdateRegistration = `UPDATE herald_registration SET namespace = ?1, url = ?2, host = ?3, config = ?4, on_rejected = ?5, kinds = ?6,
				"window" = ?7, retain_max_ns = ?8, retry = ?9, rate = ?10,
				next_attempt_at = CASE WHEN rate <> '' AND ?10 = '' AND next_attempt_at = paced_until THEN NULL ELSE next_attempt_at END,
				paced_until = CASE WHEN rate <> '' AND ?10 = '' THEN NULL ELSE paced_until END
			WHERE stream = ?11 AND id = ?12`
	sqlRegisterHead = "SELECT head, sealed, oldest_seq FROM herald_stream WHERE stream = ?"
	// Reseal (registrations.go) reads a page of configs in key order and
	// writes each anew where the row still holds what it read.
	sqlResealPage         = `SELECT stream, id, config FROM herald_registration WHERE (stream, id) > (?, ?) ORDER BY stream, id LIMIT ?`
	sqlReseal             = `UPDATE herald_registration SET config = ? WHERE stream = ? AND id = ? AND config = ?`
	sqlInsertRegistration = `INSERT INTO herald_registration (namespace, url, host, config, on_rejected, kinds, "window", retain_max_ns, retry, rate, stream, id, next_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlDeleteRegistration = "DELETE FROM herald_registration WHERE stream = ? AND id = ? RETURNING 1"
	sqlComplete           = "DELETE FROM herald_registration WHERE stream = ? AND id = ? AND lease_owner = ?"
	sqlStats              = `
			SELECT r.namespace,
				SUM(r.parked = 0 AND r.next_seq <= s.head AND r.attempts = 0),
				SUM(r.parked = 0 AND r.next_seq <= s.head AND r.attempts > 0),
				SUM(r.parked = 0 AND r.next_seq > s.head),
				SUM(r.parked = 1 AND r.paused = 0),
				SUM(r.paused = 1),
				SUM(r.lease_until IS NOT NULL AND r.lease_until > ?),
				SUM(MAX(s.head - r.next_seq + 1, 0))` + statusFrom + `
			GROUP BY r.namespace`
	sqlLagging = "SELECT " + statusColumns + statusFrom +
		"WHERE r.next_seq <= s.head ORDER BY s.head - r.next_seq DESC, r.stream, r.id LIMIT ?"
	sqlOldestParked = "SELECT " + statusColumns + statusFrom +
		"WHERE r.parked = 1 AND r.paused = 0 ORDER BY r.parked_at, r.stream, r.id LIMIT 1"
)

// Due's claim (claims.go).
const (
	// dueFrom joins each woken stream to its registrations. CROSS JOIN fixes
	// SQLite's join order: streams first, through the partial index
	// herald_stream_wake, so that idle streams are never read.
	dueFrom = ` FROM herald_stream AS s CROSS JOIN herald_registration AS r ON r.stream = s.stream `
	// dueWhere selects due registrations (alias r) on woken streams (alias s) at
	// instant ?1, but those held for their host (not up, next probe later).
	dueWhere = ` WHERE s.wake_at <= ?1
	AND r.parked = 0
	AND r.next_seq <= s.head
	AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?1)
	AND (r.lease_until IS NULL OR r.lease_until <= ?1)
	AND r.host NOT IN (SELECT host FROM herald_host WHERE state <> 'up' AND next_probe_at > ?1) `
	sqlAnyWoken = "SELECT EXISTS (SELECT 1 FROM herald_stream WHERE wake_at <= ?)"
	// sqlWoken lists the woken streams at ?1 with their heads, through the
	// partial index herald_stream_wake.
	sqlWoken = "SELECT stream, head FROM herald_stream WHERE wake_at <= ?"
	// sqlNextCursor is the lowest cursor of stream ?1 above ?2 and at most
	// ?3 (its head) where unparked registrations wait, or NULL: one probe
	// of herald_registration_due, which skips the registrations between
	// cursors and never reads one at the head.
	sqlNextCursor = "SELECT MIN(next_seq) FROM herald_registration WHERE stream = ?1 AND parked = 0 AND next_seq > ?2 AND next_seq <= ?3"
	// sqlDueOfCursor reads the first ?5 due registrations at ?3 of stream
	// ?1 at cursor ?4 and of namespace ?2, but those of the hosts at their
	// cap (?6, a JSON array), in claim order, from the narrow columns of
	// herald_registration_due, which gives that order (no sort, no row's
	// config) and stops at the LIMIT; pickDue merges the cursors.
	sqlDueOfCursor = `SELECT r.id, r.host, r.next_attempt_at FROM herald_registration AS r
	WHERE r.stream = ?1 AND r.next_seq = ?4 AND r.namespace = ?2 AND r.parked = 0
	AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?3)
	AND (r.lease_until IS NULL OR r.lease_until <= ?3)
	AND r.host NOT IN (SELECT host FROM herald_host WHERE state <> 'up' AND next_probe_at > ?3)
	AND r.host NOT IN (SELECT value FROM json_each(?6))
	ORDER BY r.next_attempt_at, r.id LIMIT ?5`
	sqlUnserved = "SELECT COUNT(*)" + dueFrom + dueWhere + "AND r.namespace <> ?2"
	sqlClaim    = "UPDATE herald_registration SET lease_owner = ?, lease_until = ?, next_attempt_at = ? WHERE stream = ? AND id = ?"
	// The wake marker's bounds (wakeMarker), each one probe of an index.
	// sqlNamespaceAt is the first namespace after ?3 with unparked
	// registrations at cursor ?2 of stream ?1, the earliest next attempt
	// after ?4 among them (NULL for none), and whether the first in claim
	// order was tried at or before ?4 or never (leased, held or due).
	sqlNamespaceAt = `SELECT r.namespace,
		(SELECT MIN(x.next_attempt_at) FROM herald_registration AS x
			WHERE x.stream = ?1 AND x.next_seq = ?2 AND x.namespace = r.namespace AND x.parked = 0 AND x.next_attempt_at > ?4),
		(SELECT x.next_attempt_at IS NULL OR x.next_attempt_at <= ?4 FROM herald_registration AS x
			WHERE x.stream = ?1 AND x.next_seq = ?2 AND x.namespace = r.namespace AND x.parked = 0 ORDER BY x.next_attempt_at LIMIT 1)
	FROM herald_registration AS r WHERE r.stream = ?1 AND r.next_seq = ?2 AND r.namespace > ?3 AND r.parked = 0
	ORDER BY r.namespace LIMIT 1`
	// sqlLeaseEnd is the earliest end after ?2 of a lease on stream ?1.
	sqlLeaseEnd = "SELECT MIN(lease_until) FROM herald_registration WHERE stream = ?1 AND lease_until > ?2"
	// sqlHostFollows says whether host ?1 has an unparked registration on
	// stream ?2.
	sqlHostFollows = "SELECT EXISTS (SELECT 1 FROM herald_registration WHERE host = ?1 AND stream = ?2 AND parked = 0)"
	sqlSetWake     = "UPDATE herald_stream SET wake_at = ? WHERE stream = ?"
)

// Host health (claims.go).
const (
	sqlRenew    = `UPDATE herald_registration SET lease_until = ?1 WHERE stream = ?2 AND id = ?3 AND lease_owner = ?4 AND lease_owner <> ''`
	hostColumns = `host, state, since, failures, probes, next_probe_at, last_error, last_failure_at, failing_since`
	sqlGetHost  = "SELECT " + hostColumns + " FROM herald_host WHERE host = ?"
	// store.HostSchemes: a host without a row gets one, up since ?3.
	sqlHostScheme    = `SELECT signature_scheme, scheme_at FROM herald_host WHERE host = ?`
	sqlSetHostScheme = `INSERT INTO herald_host (host, state, since, signature_scheme, scheme_at) VALUES (?1, 'up', ?3, ?2, ?3)
		ON CONFLICT (host) DO UPDATE SET signature_scheme = ?2, scheme_at = ?3`
	sqlPutHost = `INSERT INTO herald_host (` + hostColumns + `) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (host) DO UPDATE SET state = ?2, since = ?3, failures = ?4, probes = ?5, next_probe_at = ?6,
			last_error = ?7, last_failure_at = ?8, failing_since = ?9`
	// store.Host.HeldTo: ?1 the host; hold: to ?2; release: from ?2 to ?3.
	sqlHoldHost = `UPDATE herald_registration SET next_attempt_at = ?2
			WHERE host = ?1 AND parked = 0 AND (next_attempt_at IS NULL OR next_attempt_at < ?2)`
	sqlReleaseHost = `UPDATE herald_registration SET next_attempt_at = ?3
			WHERE host = ?1 AND parked = 0 AND next_attempt_at = ?2`
	// A host-level failure: the turn ends at cursor ?4 with no attempt
	// charged, ?7 host failures, due again at ?5 or its pace if later, the
	// reason ?6.
	sqlHostFailed = `UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 0 ELSE attempts END,
				next_seq = MAX(next_seq, ?4), host_failures = ?7,
				next_attempt_at = MAX(?5, IFNULL(paced_until, ?5)), last_error = ?6, lease_owner = '', lease_until = NULL` + fencedWhere
	sqlWakeHostStreams = `UPDATE herald_stream SET wake_at = ?1
			WHERE stream IN (SELECT stream FROM herald_registration WHERE host = ?2 AND parked = 0)`
	sqlHosts = "SELECT " + hostColumns + ` FROM herald_host
			WHERE (?1 = '' OR host = ?1) AND (?2 = '' OR state = ?2) AND host > ?3 ORDER BY host LIMIT ?4`
	// The held registrations of the hosts not up, counted per host.
	sqlHeld = `SELECT r.host, COUNT(*)` + statusFrom + `
			JOIN herald_host AS d ON d.host = r.host AND d.state <> 'up'
			WHERE r.parked = 0 AND r.next_seq <= s.head GROUP BY r.host`
	sqlTroubledHosts = "SELECT " + hostColumns + " FROM herald_host WHERE state <> 'up' OR failures > 0"
)

// Cursors, failures, operator moves and evidence (cursor.go). The writes
// under a claim follow sqlFence (fenced) and end in fencedWhere:
// registration ?1/?2, its lease still ?3's.
const (
	// stateColumns end a registration update with what update reads.
	stateColumns = " RETURNING next_seq, parked, next_attempt_at, lease_until"
	fencedWhere  = " WHERE stream = ?1 AND id = ?2 AND lease_owner = ?3" + stateColumns
	sqlRewake    = "UPDATE herald_stream SET wake_at = MIN(IFNULL(wake_at, ?1), ?1) WHERE stream = ?2 AND head >= ?3"
	sqlFence     = `SELECT r.lease_owner, IFNULL(s.head, 0), r.next_seq, r.host_failures FROM herald_registration AS r
		LEFT JOIN herald_stream AS s ON s.stream = r.stream WHERE r.stream = ? AND r.id = ?`
	// cursorMoved is what sqlAdvance and sqlCheckpoint set: the cursor
	// ?4 if that is forward, and the failure counts reset if it moved.
	cursorMoved = `UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 0 ELSE attempts END,
				host_failures = CASE WHEN ?4 > next_seq THEN 0 ELSE host_failures END,
				last_error = CASE WHEN ?4 > next_seq THEN '' ELSE last_error END,
				next_seq = MAX(next_seq, ?4)`
	sqlAdvance    = cursorMoved + ", lease_owner = '', lease_until = NULL" + fencedWhere
	sqlCheckpoint = cursorMoved + fencedWhere
	// sqlPace: the next burst no earlier than ?4, nor the next claim.
	sqlPace = `UPDATE herald_registration SET paced_until = ?4, next_attempt_at = MAX(IFNULL(next_attempt_at, ?4), ?4)` + fencedWhere
	// failed is what sqlRetry and sqlPark set: one more attempt at the
	// cursor ?4 (the first if it moved, which starts a run of failures at
	// ?7), the reason ?6, the lease released.
	failed = `UPDATE herald_registration SET
				attempts = CASE WHEN ?4 > next_seq THEN 1 ELSE attempts + 1 END, host_failures = 0,
				failing_since = CASE WHEN ?4 > next_seq OR attempts = 0 THEN ?7 ELSE failing_since END,
				next_seq = MAX(next_seq, ?4), last_error = ?6, lease_owner = '', lease_until = NULL`
	sqlRetry  = failed + ", next_attempt_at = ?5" + fencedWhere
	sqlPark   = failed + ", parked = 1, parked_at = ?5" + fencedWhere
	sqlUnpark = `UPDATE herald_registration SET
				parked = 0, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = ?1,
				lease_owner = '', lease_until = NULL
			WHERE stream = ?2 AND id = ?3 AND parked = 1 AND paused = 0` + stateColumns
	// sqlPause and sqlResume: registration ?3/?4, at ?1, the evidence's text ?2.
	sqlPause = `UPDATE herald_registration SET
				parked = 1, paused = 1, parked_at = ?1, last_error = ?2, lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4 AND paused = 0` + stateColumns
	sqlResume = `UPDATE herald_registration SET
				parked = 0, paused = 0, parked_at = NULL, attempts = 0, host_failures = 0, next_attempt_at = ?1,
				last_error = ?2, lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4 AND paused = 1` + stateColumns
	sqlMoveFrom = "SELECT r.next_seq, s.head, s.oldest_seq" + statusFrom + "WHERE r.stream = ? AND r.id = ?"
	sqlMove     = `UPDATE herald_registration SET
				next_seq = ?1, attempts = 0, host_failures = 0, next_attempt_at = ?2, last_error = '',
				lease_owner = '', lease_until = NULL
			WHERE stream = ?3 AND id = ?4` + stateColumns
	sqlInsertEvidence = `INSERT INTO herald_evidence
		(stream, registration, at, event, seq, record_id, message_id, attempt, status, body, location, duration_ns, error, not_before)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// Keep the registration's newest ?3 (store.MaxEvidence).
	sqlTrimEvidence = `DELETE FROM herald_evidence WHERE stream = ?1 AND registration = ?2 AND id <= (
			SELECT id FROM herald_evidence WHERE stream = ?1 AND registration = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?3)`
	sqlEvidence = `SELECT at, event, seq, record_id, message_id, attempt, status, body, location,
				duration_ns, error, not_before
			FROM herald_evidence WHERE stream = ? AND registration = ? ORDER BY id DESC LIMIT ?`
)

// Retention (retention.go).
const (
	sqlPruneCandidates = `SELECT s.stream, s.head, s.sealed, s.oldest_seq,
				(SELECT COUNT(*) FROM herald_registration AS r WHERE r.stream = s.stream)
			FROM herald_stream AS s WHERE s.stream >= ? ORDER BY s.stream LIMIT ?`
	sqlPruneRun = `SELECT seq, appended_at, length(payload) FROM herald_record
		WHERE stream = ? AND seq >= ? AND seq < ? ORDER BY seq LIMIT ?`
	sqlPruneHolders = "SELECT next_seq, retain_max_ns, namespace FROM herald_registration WHERE stream = ?"
	sqlPruneBehind  = "SELECT " + statusColumns + statusFrom + "WHERE r.stream = ? AND r.next_seq < ? ORDER BY r.id"
	sqlExpire       = `UPDATE herald_registration SET next_seq = ?, attempts = 0, host_failures = 0, last_error = ?
				WHERE stream = ? AND id = ?`
	sqlPruneRecords = "DELETE FROM herald_record WHERE stream = ? AND seq < ?"
	sqlPruneMark    = "UPDATE herald_stream SET oldest_seq = ? WHERE stream = ?"
	sqlPruneStream  = "DELETE FROM herald_stream WHERE stream = ?"
	// The evidence older than the cutoff ?2, but a parked registration's
	// newest park evidence (?3).
	sqlPruneEvidence = `DELETE FROM herald_evidence WHERE stream = ?1 AND at <= ?2 AND id NOT IN (
						SELECT MAX(e.id) FROM herald_evidence AS e JOIN herald_registration AS r
							ON r.stream = e.stream AND r.id = e.registration
						WHERE e.stream = ?1 AND r.parked = 1 AND e.event = ?3 GROUP BY e.registration)`
	// The hosts no registration is of that failed last at or before ?1: the
	// IN list is built once, so a pass reads the registrations once.
	sqlPruneHosts = `DELETE FROM herald_host WHERE IFNULL(last_failure_at, since) <= ?1
				AND host NOT IN (SELECT host FROM herald_registration)`
	sqlIncrementalVacuum = "PRAGMA incremental_vacuum(0)"
	sqlStreams           = `SELECT s.stream, s.head, s.sealed, s.oldest_seq,
				(SELECT COUNT(*) FROM herald_registration AS r WHERE r.stream = s.stream),
				(SELECT IFNULL(SUM(length(payload)), 0) FROM herald_record AS x WHERE x.stream = s.stream)
			FROM herald_stream AS s
			WHERE (?1 = '' OR s.stream = ?1) AND s.stream > ?2
			ORDER BY s.stream LIMIT ?3`
)

// Resends (resend.go).
const (
	sqlResendInsert = `INSERT INTO herald_resend (stream, id, seq, asked_at, asked_by) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING 1`
	// Whether a resend is pending and unleased at ?1: DueResends' look
	// from a read snapshot, without the write lock.
	sqlAnyResend = "SELECT EXISTS (SELECT 1 FROM herald_resend WHERE lease_until IS NULL OR lease_until <= ?)"
	// The pending resends of namespace ?1 unleased at ?2, oldest asked
	// first, ?3 at most.
	sqlDueResends = `SELECT p.stream, p.id, p.seq, p.asked_at, p.asked_by FROM herald_resend AS p
			JOIN herald_registration AS r ON r.stream = p.stream AND r.id = p.id
			WHERE r.namespace = ?1 AND (p.lease_until IS NULL OR p.lease_until <= ?2)
			ORDER BY p.asked_at, p.stream, p.id, p.seq LIMIT ?3`
	sqlLeaseResend  = "UPDATE herald_resend SET lease_owner = ?, lease_until = ? WHERE stream = ? AND id = ? AND seq = ?"
	sqlRenewResend  = "UPDATE herald_resend SET lease_until = ? WHERE stream = ? AND id = ? AND seq = ? AND lease_owner = ?"
	sqlDeleteResend = "DELETE FROM herald_resend WHERE stream = ? AND id = ? AND seq = ? AND lease_owner = ? RETURNING 1"
)

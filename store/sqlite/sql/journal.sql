-- The journal (journal.go).

-- name: lookup_digest
SELECT stream, seq, digest, appended_at, traceparent, tracestate FROM herald_record WHERE id = ?

-- name: head_sealed
SELECT head, sealed FROM herald_stream WHERE stream = ?

-- name: upsert_head
INSERT INTO herald_stream (stream, head, sealed, wake_at)
		VALUES (?1, ?2, ?3, CASE WHEN EXISTS (SELECT 1 FROM herald_registration WHERE stream = ?1) THEN ?4 END)
		ON CONFLICT (stream) DO UPDATE SET
			head = excluded.head,
			sealed = excluded.sealed,
			wake_at = IFNULL(excluded.wake_at, herald_stream.wake_at)

-- name: insert_record
INSERT INTO herald_record (stream, seq, id, kind, content_type, payload, final, appended_at, digest, traceparent, tracestate)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: read
-- A page (journal.Journal.Read): the records from ?2 to the last seq of
-- the first ?3 whose running payload total is within ?4, the first
-- whatever its size. length(payload) reads a blob's size from its
-- record header, not the blob: the bound costs an index range of at most
-- ?3 entries, and only the page's payloads are read.
SELECT {{template "record_columns"}} FROM herald_record WHERE stream = ?1 AND seq >= ?2 AND seq <= (
		SELECT max(seq) FROM (
			SELECT seq, row_number() OVER w AS n, sum(size) OVER w AS total
			FROM (SELECT seq, length(payload) AS size FROM herald_record WHERE stream = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3)
			WINDOW w AS (ORDER BY seq ROWS UNBOUNDED PRECEDING))
		WHERE n = 1 OR total <= ?4)
		ORDER BY seq

-- name: head
SELECT IFNULL(MAX(head), 0) FROM herald_stream WHERE stream = ?

-- name: lookup
SELECT {{template "record_columns"}} FROM herald_record WHERE id = ?

-- The journal (journal.go): the package documentation, "Appending".

-- name: insert_record
-- AppendTx's usual append, one entry: a plain insert, the table's checks and
-- trigger its fence (README, "Producers' grants"); xid and pos are the
-- table's defaults. The seal check is one probe of an index range, the
-- stream's final records (herald_sealed, herald_record_final). No row: the
-- stream is sealed or the id stored, and append_rows decides. No conflict
-- target: naming (id) needs SELECT on it, which a producer has not; id is
-- the table's only unique key, so the two are the same.
INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
SELECT @stream::text, @id::text, @kind::text, @content_type::text, @payload::bytea, @final::boolean, @digest::bytea,
    @at::timestamptz, @traceparent::text, @tracestate::text
WHERE NOT EXISTS (SELECT FROM herald_sealed WHERE stream = @stream)
ON CONFLICT DO NOTHING

-- name: append_rows
-- A batch, or an entry insert_record did not insert: herald_append_rows
-- (the migration) checks, inserts and decides.
SELECT * FROM herald_append_rows(@stream, @ids, @kinds, @content_types, @payloads, @finals, @traceparents, @tracestates, @at)

-- name: lookup_ids
-- Append's seqs, once a sequencer step ran.
SELECT r.id, r.stream, coalesce(q.seq, 0), r.kind, r.content_type, r.final, r.appended_at, r.traceparent, r.tracestate,
    q.refused IS NOT NULL
FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = ANY (@ids::text[])

-- name: head
SELECT head FROM herald_stream WHERE stream = @stream

-- name: final_seq
SELECT coalesce(final_seq, 0) FROM herald_stream WHERE stream = @stream

-- name: read
-- A page (journal.Journal.Read): the first @limit numbered records from
-- @from_seq, up to the last whose running payload total is within
-- @max_bytes, the first whatever its size. The window runs on the index
-- range under the LIMIT; octet_length reads a TOASTed payload's size from
-- its pointer, and the payloads past the bound are never fetched.
SELECT seq, id, kind, content_type, payload, final, appended_at, traceparent, tracestate FROM (
    SELECT q.seq, r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate,
        row_number() OVER w AS n, sum(octet_length(r.payload)) OVER w AS total
    FROM herald_seq q JOIN herald_record r ON r.id = q.id
    WHERE q.stream = @stream AND q.seq >= @from_seq
    WINDOW w AS (ORDER BY q.seq ROWS UNBOUNDED PRECEDING)
    ORDER BY q.seq LIMIT @limit) page
WHERE n = 1 OR total <= @max_bytes ORDER BY seq

-- name: lookup_verdict
-- Lookup: a record without a seq is refused (refused set) or waiting.
SELECT coalesce(q.seq, 0), r.id, r.kind, r.content_type, r.payload, r.final, r.appended_at, r.traceparent, r.tracestate,
    r.stream, q.refused
FROM herald_record r LEFT JOIN herald_seq q ON q.id = r.id WHERE r.id = @id

-- name: refused
SELECT q.stream, q.id, r.kind, r.appended_at, q.refused FROM herald_seq q JOIN herald_record r ON r.id = q.id
WHERE q.refused IS NOT NULL AND (@stream::text = '' OR q.stream = @stream)
ORDER BY q.stream, r.pos LIMIT @limit

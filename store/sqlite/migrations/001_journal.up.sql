-- The journal: one row per stream (its head and whether a final record
-- sealed it) and one row per record. Seqs are assigned under the single
-- write lock from herald_stream.head, so they are gapless and commit-ordered.
-- Times are unix nanoseconds (INTEGER), UTC.

CREATE TABLE herald_stream (
    stream TEXT    NOT NULL PRIMARY KEY,
    head   INTEGER NOT NULL DEFAULT 0 CHECK (head >= 0), -- seq of the newest record, 0 if none
    sealed INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)) -- the record at head is final
) STRICT, WITHOUT ROWID;

-- A rowid table, not WITHOUT ROWID: payloads up to 1 MiB belong in overflow
-- pages, not in the B-tree that orders the rows.
CREATE TABLE herald_record (
    stream       TEXT    NOT NULL REFERENCES herald_stream (stream),
    seq          INTEGER NOT NULL CHECK (seq >= 1),
    id           TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    final        INTEGER NOT NULL CHECK (final IN (0, 1)),
    appended_at  INTEGER NOT NULL,
    digest       BLOB    NOT NULL, -- journal.Digest of (stream, entry): the idempotency check
    UNIQUE (stream, seq)
) STRICT;

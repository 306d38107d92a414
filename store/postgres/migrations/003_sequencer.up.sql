-- herald's schema, version 3: appends without a lock (issue 15; the package
-- documentation, "Appending"). An append is a plain INSERT with seq NULL;
-- one sequencer at a time gives committed records their seqs afterwards.
-- Records and cursors of earlier versions are kept: every existing record already
-- has its seq.

-- pos: insertion order, the order the sequencer takes a stream's records in
-- (a batch is inserted in entry order). Existing rows get values in no
-- particular order, which does not matter: they are all sequenced.
ALTER TABLE herald_record ADD COLUMN pos bigint GENERATED ALWAYS AS IDENTITY;
-- refused: why the sequencer refused the record (it committed after its
-- stream's final record was sequenced). A refused record keeps seq NULL: it
-- is never read nor delivered, and stays for an operator to see.
ALTER TABLE herald_record ADD COLUMN refused text;
-- The sequencer updates every record once: room on the page lets the new
-- version stay there, so the WAL record holds only the changed bytes, not
-- the payload again (new pages only; version 1's are full and stay so).
ALTER TABLE herald_record SET (fillfactor = 50);
ALTER TABLE herald_record DROP CONSTRAINT herald_record_pkey;
ALTER TABLE herald_record ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE herald_record ADD CONSTRAINT herald_record_refused_unsequenced CHECK (refused IS NULL OR seq IS NULL);
-- Readers: a stream's sequenced records by seq. Partial, so an append's
-- INSERT does not write it; the sequencer's UPDATE does.
CREATE UNIQUE INDEX herald_record_stream_seq ON herald_record (stream, seq) WHERE seq IS NOT NULL;
-- The sequencer's work list, in insertion order: empty when idle.
CREATE INDEX herald_record_unsequenced ON herald_record (pos) WHERE seq IS NULL AND refused IS NULL;
-- An append's seal check: committed final records not yet sequenced.
CREATE INDEX herald_record_unsequenced_final ON herald_record (stream) WHERE final AND seq IS NULL AND refused IS NULL;
-- Refused records, by stream, for operators.
CREATE INDEX herald_record_refused ON herald_record (stream, pos) WHERE refused IS NOT NULL;

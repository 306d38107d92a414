ALTER TABLE herald_stream DROP COLUMN oldest_seq;

DROP TABLE herald_evidence;
DROP TABLE herald_registration;
DROP INDEX herald_stream_wake;
ALTER TABLE herald_stream DROP COLUMN wake_at;

DROP TABLE herald_record;
DROP TABLE herald_stream;

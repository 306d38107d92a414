-- Back to version 2, where every record has a seq. MigrateDown sequences
-- committed records first and refuses, naming them, while refused records
-- exist; this check is the backstop for a record committed in between.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM herald_record WHERE seq IS NULL) THEN
        RAISE EXCEPTION 'herald_record holds records without a seq (not yet sequenced, or refused): schema version 2 cannot store them';
    END IF;
END
$$;
DROP INDEX herald_record_refused;
DROP INDEX herald_record_unsequenced_final;
DROP INDEX herald_record_unsequenced;
DROP INDEX herald_record_stream_seq;
ALTER TABLE herald_record DROP CONSTRAINT herald_record_refused_unsequenced;
ALTER TABLE herald_record ALTER COLUMN seq SET NOT NULL;
ALTER TABLE herald_record ADD PRIMARY KEY (stream, seq);
ALTER TABLE herald_record DROP COLUMN refused;
ALTER TABLE herald_record DROP COLUMN pos;
ALTER TABLE herald_record RESET (fillfactor);

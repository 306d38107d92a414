-- Tables of the row-cost experiment (run.sh). app_order is the
-- application's own row; every other table is one way to write a record
-- beside it in the same transaction.
CREATE TABLE app_order (id text PRIMARY KEY, body bytea NOT NULL);
-- The floor: a record-sized row with one unique key.
CREATE TABLE app_outbox (id text PRIMARY KEY, stream text NOT NULL, kind text NOT NULL, payload bytea NOT NULL,
    digest bytea NOT NULL, appended_at timestamptz NOT NULL);
-- herald_stream as the append's seal probe reads it.
CREATE TABLE herald_stream (stream text COLLATE "C" PRIMARY KEY, head bigint NOT NULL DEFAULT 0, final_seq bigint);
CREATE INDEX herald_stream_sealed ON herald_stream (stream) WHERE final_seq IS NOT NULL;
INSERT INTO herald_stream (stream) VALUES ('order/0');
-- rec(name, worklist): a table of herald_record's shape (store/postgres
-- migrations 003, 008, 012): its columns, fillfactor, unique id, the
-- readers' partial (stream, seq) index, the seal check's partial index,
-- and the sequencer's work list when worklist.
CREATE FUNCTION rec(name text, worklist bool) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (stream text COLLATE "C" NOT NULL, seq bigint, id text COLLATE "C" NOT NULL,
    kind text NOT NULL, content_type text NOT NULL, payload bytea NOT NULL, final boolean NOT NULL, digest bytea NOT NULL,
    appended_at timestamptz NOT NULL, pos bigint GENERATED ALWAYS AS IDENTITY, refused text,
    traceparent text NOT NULL DEFAULT '''', tracestate text NOT NULL DEFAULT '''',
    UNIQUE (id), CHECK (seq >= 1), CHECK (refused IS NULL OR seq IS NULL)) WITH (fillfactor = 50)', name);
  EXECUTE format('CREATE UNIQUE INDEX ON %I (stream, seq) WHERE seq IS NOT NULL', name);
  EXECUTE format('CREATE INDEX ON %I (stream) WHERE final AND coalesce(seq, 0) = 0 AND refused IS NULL', name);
  IF worklist THEN
    EXECUTE format('CREATE INDEX ON %I (pos) WHERE seq IS NULL AND refused IS NULL', name);
  END IF;
END $$;
SELECT rec('rec_nowl', false);
SELECT rec('rec_wl', true);
SELECT rec('rec_oc', true);
SELECT rec('rec_full', true);

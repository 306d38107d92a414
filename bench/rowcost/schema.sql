-- Tables of the row-cost experiment (run.sh). app_order is the
-- application's own row; every other table is one way to write a record
-- beside it in the same transaction.
CREATE TABLE app_order (id text PRIMARY KEY, body bytea NOT NULL);
-- The floor: a record-sized row with one unique key.
CREATE TABLE app_outbox (id text PRIMARY KEY, stream text NOT NULL, kind text NOT NULL, payload bytea NOT NULL,
    digest bytea NOT NULL, appended_at timestamptz NOT NULL);
-- rec(name, worklist): a table of herald_record's shape (store/postgres's
-- migration): its columns, primary key on id, the seal check's partial
-- index of final records, and the sequencer's work list on the appending
-- transaction: none, a btree on (xid, pos) (herald's), or a BRIN on xid.
CREATE FUNCTION rec(name text, worklist text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (id text COLLATE "C" PRIMARY KEY, stream text COLLATE "C" NOT NULL,
    kind text NOT NULL, content_type text NOT NULL, payload bytea NOT NULL, final boolean NOT NULL, digest bytea NOT NULL,
    appended_at timestamptz NOT NULL, traceparent text NOT NULL DEFAULT '''', tracestate text NOT NULL DEFAULT '''',
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(), pos bigint GENERATED ALWAYS AS IDENTITY (CACHE 32))', name);
  EXECUTE format('CREATE INDEX ON %I (stream) WHERE final', name);
  IF worklist = 'btree' THEN
    EXECUTE format('CREATE INDEX ON %I (xid, pos)', name);
  ELSIF worklist = 'brin' THEN
    EXECUTE format('CREATE INDEX ON %I USING brin ((xid::text::bigint)) WITH (pages_per_range = 16, autosummarize = on)', name);
  END IF;
END $$;
SELECT rec('rec_nowl', 'none');
SELECT rec('rec_wl', 'btree');
SELECT rec('rec_brin', 'brin');
SELECT rec('rec_oc', 'btree');
SELECT rec('rec_full', 'btree');

package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

var producerRoles atomic.Int64

// readmeSQL returns the README's SQL block after the marker
// <!-- what: test -->, which names the test that runs it.
func readmeSQL(t *testing.T, what, test string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, after, found := strings.Cut(string(readme), "<!-- "+what+": "+test+" -->\n```sql\n")
	require.True(t, found, "README.md has the %s block after its marker", what)
	block, _, found := strings.Cut(after, "```\n")
	require.True(t, found)
	return block
}

// newProducerDB returns a migrated database whose store is its owner's and
// whose URL is a role's (a login of the test cluster) holding exactly the
// README's grants for producers, and INSERT on the application's own
// table, app_order.
func newProducerDB(t *testing.T) sqlDB {
	t.Helper()
	ctx := t.Context()
	d := newSQLDB(t)
	role := fmt.Sprintf("herald_producer_%d_%d", os.Getpid(), producerRoles.Add(1))
	grants := strings.ReplaceAll(readmeSQL(t, "grants", "TestProducerWithTheDocumentedGrants"), " TO app;", " TO "+role+";")
	require.Equal(t, 5, strings.Count(grants, role), "the README grants five things to app")
	pool := d.s.Pool()
	_, err := pool.Exec(ctx, `CREATE ROLE `+role+` LOGIN`)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		// Its privileges first, then the role, which is the cluster's.
		_, _ = pool.Exec(ctx, `DROP OWNED BY `+role)
		_, _ = pool.Exec(ctx, `DROP ROLE `+role)
	})
	_, err = pool.Exec(ctx, grants)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE app_order (id int PRIMARY KEY, body text NOT NULL);
GRANT INSERT, SELECT ON app_order TO `+role)
	require.NoError(t, err)
	u, err := url.Parse(d.url)
	require.NoError(t, err)
	u.User = url.User(role)
	return sqlDB{url: u.String(), s: d.s}
}

// TestProducerWithTheDocumentedGrants: a role holding exactly the README's
// grants appends in its own transaction, from Go (postgres.Open and
// AppendTx, repeated: the idempotent repeat) and from SQL (herald_append),
// and the records are delivered as any other: numbered, read by the owner.
func TestProducerWithTheDocumentedGrants(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	s, err := postgres.Open(ctx, p.url)
	require.NoError(t, err, "Open as the producer")
	t.Cleanup(func() { _ = s.Close() })

	for range 2 { // the second time, the same entries: the stored records
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // before Close: a failed append must not hang it
		_, err = tx.Exec(ctx, `INSERT INTO app_order VALUES (1, 'one') ON CONFLICT DO NOTHING`)
		require.NoError(t, err)
		recs, err := s.AppendTx(ctx, tx, "order/1", entry("go-1"), entry("go-2"))
		require.NoError(t, err)
		require.Len(t, recs, 2)
		one, err := s.AppendTx(ctx, tx, "order/1", entry("go-3")) // one entry: the plain insert
		require.NoError(t, err)
		require.Len(t, one, 1)
		require.NoError(t, tx.Commit(ctx))
	}
	c := p.conn(t)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO app_order VALUES (2, 'two')`)
	require.NoError(t, err)
	var id string
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('order/1', 'sql-1', 'order.created', '{"id":2}'::jsonb)`).Scan(&id))
	require.Equal(t, "sql-1", id)
	require.NoError(t, tx.Commit(ctx))

	require.Equal(t, 4, sequence(t, p.s))
	require.Equal(t, []string{"go-1", "go-2", "go-3", "sql-1"}, readIDs(t, p.s, "order/1"))
	_, err = s.Lookup(ctx, "go-1")
	require.Error(t, err, "the producer reads no record: it has no grant to")
}

// TestProducerCannotForge: with exactly the README's grants, each forgery
// of issue 38 is refused and leaves nothing: a raw INSERT into
// herald_record (the alert the operators' subscriber would take as
// herald's), an append to herald/events or with a herald-event: id, a kind
// with CR LF, a non-JSON payload under application/json, by herald_append,
// by herald_append_rows called by hand (Go's checks bypassed) and by a raw
// INSERT (the table's checks and trigger), a
// transaction id written by hand, a resend asked by hand (no grant on
// herald_resend), and a temporary table posing as herald_record.
func TestProducerCannotForge(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	c := p.conn(t)
	refused := func(name, code, sql string, args ...any) {
		t.Helper()
		_, err := c.Exec(ctx, sql, args...)
		require.Error(t, err, name)
		pe := pgErr(t, err)
		require.Equal(t, code, pe.Code, "%s: %s", name, pe.Message)
	}
	const rows = `SELECT * FROM herald_append_rows($1, $2, $3, $4, $5, $6, $7, $8, NULL)`
	one := func(stream, id, kind, ct string, payload []byte) []any {
		return []any{stream, []string{id}, []string{kind}, []string{ct}, [][]byte{payload}, []bool{false}, []string{""}, []string{""}}
	}
	alert := []byte(`{"registration":"billing","reason":"forged"}`)

	refused("a raw INSERT", "42501", `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
VALUES ('herald/events', 'herald-event:forged', 'herald.registration.parked', 'application/json', $1, false, '\x00', now())`, alert)
	refused("a hand-written xid", "42501", `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, xid)
VALUES ('orders/1', 'x-1', 'k', 'application/json', '\x7b7d', false, '\x00', now(), '1')`)
	refused("an UPDATE of the xid", "42501", `UPDATE herald_record SET xid = '1'`)
	refused("a resend asked by hand", "42501", `INSERT INTO herald_resend (stream, id, seq, asked_at, asked_by) VALUES ('orders/1', 'billing', 1, now(), 'app')`)
	const raw = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
VALUES ($1, $2, $3, $4, $5, false, '\x00', now())`
	refused("a raw INSERT with an event's id", "42501", raw, "orders/1", journal.ReservedIDPrefix+"r", "k", "application/json", []byte(`{}`))
	refused("a raw INSERT with a kind with CR LF", "23514", raw, "orders/1", "r-1", "order.created\r\nX-Injected: 1", "application/json", []byte(`{}`))
	refused("a raw INSERT with a bad content type", "23514", raw, "orders/1", "r-2", "k", "json", []byte(`{}`))
	refused("a raw INSERT of non-JSON under application/json", "22P02", raw, "orders/1", "r-3", "k", "Application/JSON; charset=utf-8", []byte("not json"))
	refused("a raw INSERT of non-JSON under +json", "22P02", raw, "orders/1", "r-4", "k", "application/cloudevents+json", []byte("{"))
	refused("herald_append to herald/events", "HA400", `SELECT herald_append($1, 'evt-1', 'herald.registration.parked', $2::bytea, 'application/json')`,
		store.EventsStream, alert)
	refused("herald_append_rows to herald/events", "HA400", rows, one(store.EventsStream, "evt-1", "herald.registration.parked", "application/json", alert)...)
	refused("herald_append_rows with an event's id", "HA400", rows, one("orders/1", journal.ReservedIDPrefix+"x", "k", "application/json", []byte(`{}`))...)
	refused("herald_append with a kind with CR LF", "HA400", `SELECT herald_append('orders/1', 'k-1', E'order.created\r\nX-Injected: 1', '{}'::jsonb)`)
	refused("herald_append_rows with a kind with CR LF", "HA400", rows, one("orders/1", "k-2", "order.created\r\nX-Injected: 1", "application/json", []byte(`{}`))...)
	refused("herald_append with non-JSON under application/json", "HA400", `SELECT herald_append('orders/1', 'j-1', 'k', 'not json'::bytea, 'application/json')`)
	refused("herald_append_rows with non-JSON under application/json", "22P02", rows, one("orders/1", "j-2", "k", "application/json", []byte("not json"))...)
	refused("herald_append_rows with non-JSON under +json", "22P02", rows, one("orders/1", "j-3", "k", "application/cloudevents+json", []byte("{"))...)
	refused("herald_append_rows with a bad content type", "HA400", rows, one("orders/1", "c-1", "k", "json", []byte("{}"))...)

	// A temporary table named herald_record (pg_temp is searched first
	// unless named) does not catch the function's insert.
	_, err := c.Exec(ctx, `CREATE TEMP TABLE herald_record (LIKE app_order)`)
	require.NoError(t, err)
	// The transaction id is the appender's, whatever it passes.
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var xid string
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid))
	_, err = tx.Exec(ctx, `SELECT herald_append('orders/1', 'ok-1', 'order.created', '{}'::jsonb)`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	var stored []string
	rowsOf, err := p.s.Pool().Query(ctx, `SELECT id || ' ' || xid::text FROM herald_record ORDER BY id`)
	require.NoError(t, err)
	stored, err = pgx.CollectRows(rowsOf, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"ok-1 " + xid}, stored, "only the genuine append, with its transaction's id")
	require.Equal(t, 1, sequence(t, p.s))
	require.Zero(t, head(t, p.s, store.EventsStream), "no alert was forged")
}

// TestAppendRowsAgreesWithGo: herald_append_rows, called by hand by a
// producer (no Go code before it), accepts exactly the entries that
// journal.ValidateEntries accepts, case by case, on its one-statement
// path and on its checked one.
func TestAppendRowsAgreesWithGo(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	c := p.conn(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	type entry struct{ stream, id, kind, ct, payload, tp, ts string }
	ok := entry{"orders/1", "e", "order.created", "application/json", `{"a":1}`, "", ""}
	with := func(f func(*entry)) entry { e := ok; f(&e); return e }
	cases := map[string]entry{
		"plain":                        ok,
		"octet-stream, empty":          with(func(e *entry) { e.ct, e.payload = "application/octet-stream", "" }),
		"a parameter":                  with(func(e *entry) { e.ct = "application/json; charset=utf-8" }),
		"+json":                        with(func(e *entry) { e.ct = "application/cloudevents+json" }),
		"upper-case JSON type":         with(func(e *entry) { e.ct = "Application/JSON" }),
		"upper-case, not JSON":         with(func(e *entry) { e.ct, e.payload = "Application/JSON", "{" }),
		"a non-ASCII stream":           with(func(e *entry) { e.stream = "flux/é" }),
		"an id with a space":           with(func(e *entry) { e.id = "order 1" }),
		"an id with LF":                with(func(e *entry) { e.id = "order\n1" }),
		"a kind with a space":          with(func(e *entry) { e.kind = "order created" }),
		"a kind with CR LF":            with(func(e *entry) { e.kind = "order.created\r\nX: 1" }),
		"a kind with U+2028":           with(func(e *entry) { e.kind = "order\u2028created" }),
		"a kind of 201 bytes":          with(func(e *entry) { e.kind = strings.Repeat("k", 201) }),
		"a kind of 200 bytes":          with(func(e *entry) { e.kind = strings.Repeat("k", 200) }),
		"a stream of 201 bytes":        with(func(e *entry) { e.stream = strings.Repeat("s", 201) }),
		"an id of 1,025 bytes":         with(func(e *entry) { e.id = strings.Repeat("i", 1025) }),
		"no subtype":                   with(func(e *entry) { e.ct = "json" }),
		"two slashes":                  with(func(e *entry) { e.ct = "application/json/x" }),
		"not JSON":                     with(func(e *entry) { e.payload = "not json" }),
		"empty JSON":                   with(func(e *entry) { e.payload = "" }),
		"not UTF-8 text":               with(func(e *entry) { e.ct, e.payload = "text/plain", "\xff" }),
		"a traceparent":                with(func(e *entry) { e.tp = tp }),
		"a traceparent and tracestate": with(func(e *entry) { e.tp, e.ts = tp, "shop=7" }),
		"a tracestate alone":           with(func(e *entry) { e.ts = "shop=7" }),
		"a zero trace id":              with(func(e *entry) { e.tp = "00-00000000000000000000000000000000-00f067aa0ba902b7-01" }),
		"version 01":                   with(func(e *entry) { e.tp = "01" + tp[2:] }),
		"a tracestate with a control":  with(func(e *entry) { e.tp, e.ts = tp, "a=\x01" }),
		"a reserved stream":            with(func(e *entry) { e.stream = "herald/events" }),
		"a reserved id":                with(func(e *entry) { e.id = "herald-event:1" }),
		"a stream that looks reserved": with(func(e *entry) { e.stream = "heraldx/events" }),
	}
	n := 0
	for name, e := range cases {
		n++
		e.id = fmt.Sprintf("%s-%d", e.id, n)
		_, goErr := journal.ValidateEntries(e.stream, []journal.Entry{{ID: e.id, Kind: e.kind, ContentType: e.ct,
			Payload: []byte(e.payload), Traceparent: e.tp, Tracestate: e.ts}}, 0)
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		var verdict string
		var rest [9]any
		sqlErr := tx.QueryRow(ctx, `SELECT * FROM herald_append_rows($1, $2, $3, $4, $5, $6, $7, $8, NULL)`,
			e.stream, []string{e.id}, []string{e.kind}, []string{e.ct}, [][]byte{[]byte(e.payload)}, []bool{false},
			[]string{e.tp}, []string{e.ts}).Scan(&verdict, &rest[0], &rest[1], &rest[2], &rest[3], &rest[4], &rest[5], &rest[6], &rest[7], &rest[8])
		require.NoError(t, tx.Rollback(ctx))
		if goErr == nil {
			require.NoError(t, sqlErr, "%s: Go accepts it", name)
			require.Equal(t, "ok", verdict, name)
		} else {
			require.Error(t, sqlErr, "%s: Go refuses it: %v", name, goErr)
		}
	}
}

// TestProducerAppendToANewStreamMaterialisesSubscriptions: a stream a
// producer starts (herald_append and AppendTx, both through
// herald_append_rows, which runs as the schema's owner) gets a
// registration from each subscription whose prefix it is under, at its
// first record, once the sequencer gives it its row, as a stream herald
// starts does. The config the registration reads is the subscription's.
func TestProducerAppendToANewStreamMaterialisesSubscriptions(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	_, err := p.s.Subscribe(ctx, store.Subscription{Prefix: "tenant/7/", ID: "t7", Namespace: "webhook",
		URL: "https://t7.example/hooks", Config: store.Config(`{"secret":"s3cr3t"}`)}, store.Subscription{})
	require.NoError(t, err)

	s, err := postgres.Open(ctx, p.url)
	require.NoError(t, err, "Open as the producer")
	t.Cleanup(func() { _ = s.Close() })
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // before Close: a failed append must not hang it
	_, err = s.AppendTx(ctx, tx, "tenant/7/invoices", entry("go-1"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	var id string
	require.NoError(t, p.conn(t).QueryRow(ctx,
		`SELECT herald_append('tenant/7/orders', 'sql-1', 'order.created', '{"id":1}'::jsonb)`).Scan(&id))
	require.Equal(t, 2, sequence(t, p.s))

	list, err := store.AllRegistrations(ctx, p.s, store.ListQuery{Subscription: "tenant/7/", ID: "t7"})
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, st := range list {
		got[st.Stream] = st.NextSeq
		require.JSONEq(t, `{"secret":"s3cr3t"}`, string(st.Config), "the subscription's config, opened")
	}
	require.Equal(t, map[string]uint64{"tenant/7/invoices": 1, "tenant/7/orders": 1}, got)
}

// TestProducerHoldingAdvisoryLocksStopsNothing: any role that can connect
// may take any advisory lock, so a producer holding, for its session, each
// advisory key herald once elected or ordered with (the sequencer's, the
// subscriptions') must neither stop the sequencer numbering (nothing would
// ever be delivered) nor hang a sequencer step that creates a stream, nor
// Subscribe. herald's locks are on tables a producer holds no grant on.
func TestProducerHoldingAdvisoryLocksStopsNothing(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	c := p.conn(t)
	_, err := c.Exec(ctx, `SELECT pg_advisory_lock(x'686572616c645351'::bigint), pg_advisory_lock(7106209355)`)
	require.NoError(t, err, "a producer may take advisory locks: PostgreSQL has no grant for them")

	// A deadline turns a hang into a failure; nothing here waits on it.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = p.s.Subscribe(ctx, store.Subscription{Prefix: "tenant/7/", ID: "t7", Namespace: "webhook",
		URL: "https://t7.example/hooks"}, store.Subscription{})
	require.NoError(t, err, "Subscribe while a producer holds advisory locks")
	_, err = p.s.Append(ctx, "tenant/7/orders", entry("held-1"))
	require.NoError(t, err)
	n, err := p.s.Sequence(ctx)
	require.NoError(t, err, "a sequencer step creating a stream while a producer holds advisory locks")
	require.Equal(t, 0, n, "Append numbered its own record")
	require.Equal(t, []string{"held-1"}, readIDs(t, p.s, "tenant/7/orders"))
	tx, err := p.s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = p.s.AppendTx(ctx, tx, "tenant/7/invoices", entry("held-2"))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	n, err = p.s.Sequence(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the sequencer numbered the record appended in the application's transaction")
	list, err := store.AllRegistrations(ctx, p.s, store.ListQuery{Subscription: "tenant/7/", ID: "t7"})
	require.NoError(t, err)
	require.Len(t, list, 2, "the subscription materialised on both new streams")
}

// TestProducerCannotStoreAnAppendedAtGoCannotRead: appended_at is in a
// producer's grant (AppendTx's insert carries its clock), so the table
// refuses an instant Go cannot read or write as JSON: ±infinity, and a
// year past 9999. One such record stopped its stream for every receiver
// (the read failed at it, again at every sweep).
func TestProducerCannotStoreAnAppendedAtGoCannotRead(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	c := p.conn(t)
	const raw = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
VALUES ('orders/1', $1, 'k', 'application/json', '\x7b7d', false, '\x00', $2::timestamptz)`
	for _, at := range []string{"infinity", "-infinity", "10000-01-01 00:00:00+00", "4713-01-01 00:00:00+00 BC"} {
		_, err := c.Exec(ctx, raw, "at-"+at, at)
		require.Error(t, err, "appended_at %s", at)
		require.Equal(t, "23514", pgErr(t, err).Code, "appended_at %s", at)
		_, err = c.Exec(ctx, `SELECT * FROM herald_append_rows('orders/1', ARRAY[$1], ARRAY['k'], ARRAY['application/json'],
			ARRAY['\x7b7d'::bytea], ARRAY[false], ARRAY[''], ARRAY[''], $2::timestamptz)`, "rows-"+at, at)
		require.Error(t, err, "herald_append_rows at %s", at)
	}
	_, err := c.Exec(ctx, raw, "ok-1", "9999-12-31 23:59:59+00")
	require.NoError(t, err, "the last instant of year 9999 is Go's")
	require.Equal(t, 1, sequence(t, p.s))
	recs, err := p.s.Read(ctx, "orders/1", 1, 10, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	_, err = recs[0].AppendedAt.MarshalJSON()
	require.NoError(t, err)
}

// TestProducerRawInsertKeepsGoLengthsAndTraceRules: a producer's hand-written
// INSERT is held to journal.ValidateEntries' lengths, non-empty names and
// trace context, which reach receivers' headers and parsers: an empty id
// made no valid CloudEvent and a garbage traceparent went out as sent. The
// limits themselves (200-byte stream, 1024-byte id, a plain trace
// context) go in.
func TestProducerRawInsertKeepsGoLengthsAndTraceRules(t *testing.T) {
	ctx := t.Context()
	p := newProducerDB(t)
	c := p.conn(t)
	const raw = `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate)
VALUES ($1, $2, $3, $4, '', false, '\x00', now(), $5, $6)`
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ok := []any{"orders/1", "r-1", "k", "text/plain", "", ""}
	with := func(i int, v string) []any { a := append([]any(nil), ok...); a[i] = v; return a }
	for name, args := range map[string][]any{
		"an empty stream":               with(0, ""),
		"a stream over 200 bytes":       with(0, strings.Repeat("s", 201)),
		"an empty id":                   with(1, ""),
		"an id over 1024 bytes":         with(1, strings.Repeat("i", 1025)),
		"an empty kind":                 with(2, ""),
		"a kind over 200 bytes":         with(2, strings.Repeat("k", 201)),
		"a content type over 200 bytes": with(3, "text/plain; x="+strings.Repeat("x", 190)),
		"a traceparent that is not one": with(4, "garbage"),
		"a traceparent of version 01":   with(4, "01"+tp[2:]),
		"an all-zero trace id":          with(4, "00-"+strings.Repeat("0", 32)+tp[35:]),
		"a tracestate without a parent": with(5, "k=v"),
		"a tracestate over 8223 bytes":  {"orders/1", "r-1", "k", "text/plain", tp, strings.Repeat("v", 8224)},
	} {
		_, err := c.Exec(ctx, raw, args...)
		require.Error(t, err, name)
		require.Equal(t, "23514", pgErr(t, err).Code, name)
	}
	_, err := c.Exec(ctx, raw, strings.Repeat("s", 200), strings.Repeat("i", 1024), strings.Repeat("k", 200),
		"text/plain; x="+strings.Repeat("x", 186), tp, strings.Repeat("v", 8223))
	require.NoError(t, err, "Go's limits themselves")
	require.Equal(t, 1, sequence(t, p.s))
}

package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/storetest"
)

// sqlDB is a migrated database with a store on it and the URL, for
// connections that run herald_append with no herald Go code involved.
type sqlDB struct {
	url string
	s   *postgres.Store
}

func newSQLDB(t *testing.T, opts ...postgres.Option) sqlDB {
	t.Helper()
	url := pgtest.NewDatabase(t)
	_, err := postgres.MigrateUp(t.Context(), url)
	require.NoError(t, err)
	s, err := postgres.Open(t.Context(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return sqlDB{url: url, s: s}
}

// conn is a plain pgx connection: what an application in any language has.
func (d sqlDB) conn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), d.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// pgErr returns err's *pgconn.PgError (failing the test without one).
func pgErr(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	require.True(t, errors.As(err, &pe), "want a server error, got %v", err)
	return pe
}

// sqlReason runs sql on c and returns the reason of its HA400 error ("" if
// it succeeds).
func sqlReason(t *testing.T, c *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	_, err := c.Exec(t.Context(), sql, args...)
	if err == nil {
		return ""
	}
	pe := pgErr(t, err)
	require.Equal(t, "HA400", pe.Code, "%v", args)
	_, reason, found := strings.Cut(pe.Message, "invalid "+pe.ColumnName+": ")
	require.True(t, found, pe.Message)
	return reason
}

// requireRefusedAsGo checks that each of the overloads, run on c with args,
// is refused as Go refused it (goErr): HA400, the field in the error's
// column and Go's reason in its message.
func requireRefusedAsGo(t *testing.T, c *pgx.Conn, goErr error, field, name string, overloads []string, args ...any) {
	t.Helper()
	var inv *journal.InvalidError
	require.ErrorAs(t, goErr, &inv, "%s: Go refuses it too", name)
	goField := "entries[0]." + field
	if field == "stream" {
		goField = field
	}
	require.Equal(t, goField, inv.Field, name)
	for _, sql := range overloads {
		_, err := c.Exec(t.Context(), sql, args...)
		pe := pgErr(t, err)
		require.Equal(t, "HA400", pe.Code, "%s: %s", name, sql)
		require.Equal(t, field, pe.ColumnName, "%s: %s", name, sql)
		require.Equal(t, "herald_append: invalid "+field+": "+inv.Reason, pe.Message, "%s: %s", name, sql)
	}
}

// goReason returns the reason of err, a *journal.InvalidError ("" if nil).
func goReason(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var inv *journal.InvalidError
	require.ErrorAs(t, err, &inv)
	return inv.Reason
}

// TestHeraldAppendCommitsAndRollsBackWithTheCallersTransaction: the
// application's own row and its record commit together, or neither stays;
// the sequencer numbers what committed, and every overload stores its
// payload's bytes with its default content type.
func TestHeraldAppendCommitsAndRollsBackWithTheCallersTransaction(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	_, err := c.Exec(ctx, `CREATE TABLE app_order (id text PRIMARY KEY, total int NOT NULL)`)
	require.NoError(t, err)

	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO app_order VALUES ('1', 42)`)
	require.NoError(t, err)
	var got string
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb)`).Scan(&got))
	require.Equal(t, "evt-1", got)
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('orders/1', 'evt-2', 'order.note', 'paid, thanks'::text)`).Scan(&got))
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('orders/1', 'evt-3', 'order.blob', '\x00ff'::bytea)`).Scan(&got))
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('orders/1', 'evt-4', 'order.raw', '{"b":1,  "a":2}'::json, 'application/vnd.shop+json')`).Scan(&got))
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append(stream => 'orders/1', id => 'evt-5', kind => 'order.closed',
		payload => '{}'::jsonb, final => true)`).Scan(&got))
	require.Equal(t, "evt-5", got)
	require.Zero(t, head(t, d.s, "orders/1"), "nothing is read before the commit")
	require.NoError(t, tx.Commit(ctx))

	require.Equal(t, 5, sequence(t, d.s))
	recs, err := d.s.Read(ctx, "orders/1", 1, 10, 0)
	require.NoError(t, err)
	require.Len(t, recs, 5)
	want := []journal.Entry{
		{ID: "evt-1", Kind: "order.created", ContentType: "application/json", Payload: []byte(`{"total": 42}`)},
		{ID: "evt-2", Kind: "order.note", ContentType: "text/plain; charset=utf-8", Payload: []byte("paid, thanks")},
		{ID: "evt-3", Kind: "order.blob", ContentType: "application/octet-stream", Payload: []byte{0, 0xff}},
		{ID: "evt-4", Kind: "order.raw", ContentType: "application/vnd.shop+json", Payload: []byte(`{"b":1,  "a":2}`)},
		{ID: "evt-5", Kind: "order.closed", ContentType: "application/json", Payload: []byte(`{}`), Final: true},
	}
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.Seq)
		require.Equal(t, want[i], r.Entry(), "record %d", i+1)
	}

	tx, err = c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO app_order VALUES ('2', 7)`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT herald_append('orders/2', 'evt-6', 'order.created', '{"total":7}'::jsonb)`).Scan(&got))
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, sequence(t, d.s))
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT (SELECT count(*) FROM herald_record WHERE stream = 'orders/2') + (SELECT count(*) FROM app_order WHERE id = '2')`).Scan(&n))
	require.Zero(t, n, "a rolled-back transaction leaves neither its row nor its record")
	_, err = d.s.Lookup(ctx, "evt-6")
	require.ErrorIs(t, err, journal.ErrNotFound)
}

// TestHeraldAppendDigestIsJournalDigest: the digest SQL stores is
// journal.Digest of the same entry, so Go and SQL appends of one entry are
// one record.
func TestHeraldAppendDigestIsJournalDigest(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	cases := []struct {
		stream string
		e      journal.Entry
	}{
		{"s", journal.Entry{ID: "a", Kind: "k", ContentType: "application/json", Payload: []byte(`{"x": 1}`)}},
		{"s", journal.Entry{ID: "b", Kind: "k", Payload: []byte(`[]`)}}, // "" is application/json
		{"ströme/ü", journal.Entry{ID: "c d ü", Kind: "naïve.kind", ContentType: "text/plain; charset=utf-8", Payload: []byte("grüße")}},
		{"t", journal.Entry{ID: "e", Kind: "k", ContentType: "application/octet-stream", Payload: []byte{}}},
		{"u", journal.Entry{ID: "f", Kind: "k", ContentType: "application/octet-stream", Payload: []byte{0, 1, 2, 0xfe}, Final: true}},
	}
	for _, tc := range cases {
		_, err := c.Exec(ctx, `SELECT herald_append($1, $2, $3, $4::bytea, $5, $6)`, tc.stream, tc.e.ID, tc.e.Kind, tc.e.Payload, tc.e.ContentType, tc.e.Final)
		require.NoError(t, err, tc.e.ID)
		var digest []byte
		require.NoError(t, c.QueryRow(ctx, `SELECT digest FROM herald_record WHERE id = $1`, tc.e.ID).Scan(&digest))
		want := journal.Digest(tc.stream, tc.e)
		require.Equal(t, want[:], digest, tc.e.ID)
	}
}

// TestHeraldAppendTakesJSONNullAsGoDoes: a JSON null is a JSON payload
// for herald_append's json, jsonb and bytea overloads as for
// journal.ValidateEntries: stored as its 4 bytes with Go's digest, and
// the same null appended again from Go is the stored record, no conflict.
// SQL NULL, no payload at all, is refused (TestHeraldAppendValidation).
func TestHeraldAppendTakesJSONNullAsGoDoes(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	null := journal.Entry{ID: "n", Kind: "k", ContentType: "application/json", Payload: []byte("null")}
	_, err := journal.ValidateEntries("s", []journal.Entry{null}, 0)
	require.NoError(t, err, "Go takes null")
	for id, call := range map[string]string{
		"json":  `SELECT herald_append('s', $1, 'k', 'null'::json)`,
		"jsonb": `SELECT herald_append('s', $1, 'k', 'null'::jsonb)`,
		"bytea": `SELECT herald_append('s', $1, 'k', 'null'::bytea, 'application/json')`,
	} {
		_, err := c.Exec(ctx, call, id)
		require.NoError(t, err, call)
		var payload, digest []byte
		require.NoError(t, c.QueryRow(ctx, `SELECT payload, digest FROM herald_record WHERE id = $1`, id).Scan(&payload, &digest))
		require.Equal(t, "null", string(payload), call)
		e := null
		e.ID = id
		want := journal.Digest("s", e)
		require.Equal(t, want[:], digest, call)
		tx := openTx(t, d.s)
		_, err = d.s.AppendTx(ctx, tx, "s", e)
		require.NoError(t, err, "Go's append of the same null finds the stored record: %s", call)
		require.NoError(t, tx.Commit(ctx))
	}
}

// TestHeraldAppendIsIdempotent: the same id with the same content is a
// no-op returning the id, whether the first append came from SQL or from
// AppendTx, committed or not yet numbered; other content is HA409 naming
// the first field that differs; nothing is written twice.
func TestHeraldAppendIsIdempotent(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	appendSQL := func(stream, id, kind, ct string, payload []byte, final bool) error {
		_, err := c.Exec(ctx, `SELECT herald_append($1, $2, $3, $4::bytea, $5, $6)`, stream, id, kind, payload, ct, final)
		return err
	}
	rows := func(id string) int {
		var n int
		require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM herald_record WHERE id = $1`, id).Scan(&n))
		return n
	}

	// SQL first, then SQL again and AppendTx, before and after numbering.
	require.NoError(t, appendSQL("s", "x", "k", "application/json", []byte(`{"a":1}`), false))
	require.NoError(t, appendSQL("s", "x", "k", "application/json", []byte(`{"a":1}`), false))
	tx := openTx(t, d.s)
	recs, err := d.s.AppendTx(ctx, tx, "s", journal.Entry{ID: "x", Kind: "k", Payload: []byte(`{"a":1}`)})
	require.NoError(t, err, "AppendTx finds the SQL-appended record the same")
	require.Zero(t, recs[0].Seq, "not numbered yet")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 1, sequence(t, d.s))
	require.NoError(t, appendSQL("s", "x", "k", "application/json", []byte(`{"a":1}`), false))
	var got string
	require.NoError(t, c.QueryRow(ctx, `SELECT herald_append('s', 'x', 'k', '{"a":1}'::json)`).Scan(&got), "json keeps the bytes")
	require.Equal(t, "x", got)
	require.Equal(t, 1, rows("x"))

	// AppendTx first, then SQL.
	commitAppend(t, d.s, "s", journal.Entry{ID: "y", Kind: "k", ContentType: "text/plain", Payload: []byte("hi")})
	require.NoError(t, c.QueryRow(ctx, `SELECT herald_append('s', 'y', 'k', 'hi'::text, 'text/plain')`).Scan(&got))
	require.Equal(t, "y", got)
	require.Equal(t, 1, rows("y"))
	_, err = d.s.Append(ctx, "s", journal.Entry{ID: "z", Kind: "k", Payload: []byte(`{"total": 42}`)})
	require.NoError(t, err)
	require.NoError(t, c.QueryRow(ctx, `SELECT herald_append('s', 'z', 'k', '{"total":42}'::jsonb)`).Scan(&got),
		"jsonb's text form is the Go payload's")
	require.Equal(t, 1, rows("z"))

	// Other content: HA409, the field named in the message and the error's column.
	for _, tc := range []struct {
		stream, kind, ct, payload string
		final                     bool
		field, column             string
	}{
		{"other", "k", "application/json", `{"a":1}`, false, "stream", "stream"},
		{"s", "k2", "application/json", `{"a":1}`, false, "kind", "kind"},
		{"s", "k", "application/vnd.x+json", `{"a":1}`, false, "content type", "content_type"},
		{"s", "k", "application/json", `{"a":2}`, false, "payload", "payload"},
		{"s", "k", "application/json", `{"a":1}`, true, "final flag", "final"},
	} {
		err := appendSQL(tc.stream, "x", tc.kind, tc.ct, []byte(tc.payload), tc.final)
		pe := pgErr(t, err)
		require.Equal(t, "HA409", pe.Code, tc.field)
		require.Equal(t, tc.column, pe.ColumnName)
		require.Equal(t, fmt.Sprintf(`herald_append: record id "x" already exists as s#1 with a different %s`, tc.field), pe.Message)
	}
	tx = openTx(t, d.s)
	_, err = d.s.AppendTx(ctx, tx, "s", journal.Entry{ID: "x", Kind: "k", Payload: []byte(`{"a":2}`)})
	require.ErrorIs(t, err, journal.ErrConflict, "AppendTx sees the SQL-appended record's content")
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 1, rows("x"))
	require.Zero(t, sequence(t, d.s))
}

// TestHeraldAppendConcurrentSameID: a second transaction appending an id
// that an open transaction appended waits for it, on the id only; then it
// is a no-op (same content) or HA409 (other content).
func TestHeraldAppendConcurrentSameID(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	for _, tc := range []struct {
		payload, code string
	}{{`{"v":1}`, ""}, {`{"v":2}`, "HA409"}} {
		id := "id-" + tc.payload
		a, b := d.conn(t), d.conn(t)
		txA, err := a.Begin(ctx)
		require.NoError(t, err)
		_, err = txA.Exec(ctx, `SELECT herald_append('s', $1, 'k', '{"v":1}'::jsonb)`, id)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := b.Exec(ctx, `SELECT herald_append('s', $1, 'k', $2::jsonb)`, id, tc.payload)
			done <- err
		}()
		waitForLockWait(t, d.s)
		require.NoError(t, txA.Commit(ctx))
		err = <-done
		if tc.code == "" {
			require.NoError(t, err)
		} else {
			require.Equal(t, tc.code, pgErr(t, err).Code)
		}
	}
	require.Equal(t, 2, sequence(t, d.s))
}

// TestHeraldAppendValidation: every check of journal.ValidateEntries, with
// its SQLSTATE (HA400, HA413 over the payload limit), the field in the
// error's column, and the message Go gives, field renamed: the checks are
// the same. Nothing is written.
func TestHeraldAppendValidation(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	type call struct {
		stream, id, kind, ct string
		payload              []byte
	}
	ok := call{"s", "id", "k", "application/json", []byte(`{}`)}
	with := func(f func(*call)) call { c := ok; f(&c); return c }
	cases := []struct {
		name  string
		call  call
		code  string
		field string
	}{
		{"empty stream", with(func(c *call) { c.stream = "" }), "HA400", "stream"},
		{"long stream", with(func(c *call) { c.stream = long(201) }), "HA400", "stream"},
		{"stream with a space", with(func(c *call) { c.stream = "a b" }), "HA400", "stream"},
		{"stream with a tab", with(func(c *call) { c.stream = "a\tb" }), "HA400", "stream"},
		{"stream with NBSP", with(func(c *call) { c.stream = "ü\u00a0" }), "HA400", "stream"},
		{"stream with an ideographic space", with(func(c *call) { c.stream = "x\u3000" }), "HA400", "stream"},
		{"stream with U+2028", with(func(c *call) { c.stream = "x\u2028" }), "HA400", "stream"},
		{"stream with a C1 control", with(func(c *call) { c.stream = "x\u0085y" }), "HA400", "stream"},
		{"empty id", with(func(c *call) { c.id = "" }), "HA400", "id"},
		{"long id", with(func(c *call) { c.id = long(1025) }), "HA400", "id"},
		{"long id in UTF-8 bytes", with(func(c *call) { c.id = strings.Repeat("é", 513) }), "HA400", "id"},
		{"id with a newline", with(func(c *call) { c.id = "a b\nc" }), "HA400", "id"},
		{"id with DEL", with(func(c *call) { c.id = "ab\x7f" }), "HA400", "id"},
		{"empty kind", with(func(c *call) { c.kind = "" }), "HA400", "kind"},
		{"long kind", with(func(c *call) { c.kind = long(201) }), "HA400", "kind"},
		{"kind with a space", with(func(c *call) { c.kind = "order created" }), "HA400", "kind"},
		{"long content type", with(func(c *call) { c.ct = "text/" + long(196) }), "HA400", "content_type"},
		{"content type without subtype", with(func(c *call) { c.ct = "text" }), "HA400", "content_type"},
		{"content type with a bad parameter", with(func(c *call) { c.ct = "text/plain; charset" }), "HA400", "content_type"},
		{"content type with a duplicate parameter", with(func(c *call) { c.ct = "text/plain; a=1; A=2" }), "HA400", "content_type"},
		{"content type after the subtype", with(func(c *call) { c.ct = "text/plain x" }), "HA400", "content_type"},
		{"not a media type", with(func(c *call) { c.ct = "/json" }), "HA400", "content_type"},
		{"JSON type, not JSON", with(func(c *call) { c.payload = []byte(`{"a":`) }), "HA400", "payload"},
		{"+json type, not JSON", with(func(c *call) { c.ct = "application/activity+json"; c.payload = []byte("hi") }), "HA400", "payload"},
		{"empty content type is JSON", with(func(c *call) { c.ct = ""; c.payload = []byte("hi") }), "HA400", "payload"},
		{"payload over the limit", with(func(c *call) {
			c.ct = "application/octet-stream"
			c.payload = make([]byte, journal.DefaultMaxPayload+1)
		}), "HA413", "payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, goErr := journal.ValidateEntries(tc.call.stream, []journal.Entry{{ID: tc.call.id, Kind: tc.call.kind, ContentType: tc.call.ct, Payload: tc.call.payload}}, 0)
			var inv *journal.InvalidError
			require.ErrorAs(t, goErr, &inv, "Go refuses it too")
			_, err := c.Exec(ctx, `SELECT herald_append($1, $2, $3, $4::bytea, $5)`, tc.call.stream, tc.call.id, tc.call.kind, tc.call.payload, tc.call.ct)
			pe := pgErr(t, err)
			require.Equal(t, tc.code, pe.Code)
			require.Equal(t, tc.field, pe.ColumnName)
			require.Equal(t, strings.TrimPrefix(inv.Field, "entries[0]."), tc.field)
			require.Equal(t, "herald_append: invalid "+tc.field+": "+inv.Reason, pe.Message)
		})
	}

	for _, tc := range []struct {
		sql, field string
	}{
		{`SELECT herald_append(NULL, 'i', 'k', '{}'::jsonb)`, "stream"},
		{`SELECT herald_append('s', NULL, 'k', '{}'::jsonb)`, "id"},
		{`SELECT herald_append('s', 'i', NULL, '{}'::jsonb)`, "kind"},
		{`SELECT herald_append('s', 'i', 'k', NULL::jsonb)`, "payload"},
		{`SELECT herald_append('s', 'i', 'k', NULL::bytea)`, "payload"},
	} {
		_, err := c.Exec(ctx, tc.sql)
		pe := pgErr(t, err)
		require.Equal(t, "HA400", pe.Code, tc.sql)
		require.Equal(t, tc.field, pe.ColumnName)
		require.Equal(t, "herald_append: invalid "+tc.field+": is null", pe.Message)
	}

	// The limit is the setting herald.max_payload, in bytes, when set.
	_, err := c.Exec(ctx, `SET herald.max_payload = 10`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT herald_append('s', 'big', 'k', '12345678901'::text)`)
	pe := pgErr(t, err)
	require.Equal(t, "HA413", pe.Code)
	require.Equal(t, "herald_append: invalid payload: is 11 bytes, more than the limit of 10", pe.Message)
	_, err = c.Exec(ctx, `SET herald.max_payload = 'lots'`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT herald_append('s', 'big', 'k', '1'::text)`)
	pe = pgErr(t, err)
	require.Equal(t, "22023", pe.Code)
	require.Contains(t, pe.Message, "herald.max_payload")
	_, err = c.Exec(ctx, `RESET herald.max_payload`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT herald_append('s', 'big', 'k', '12345678901'::text)`)
	require.NoError(t, err, "back to the default limit")

	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM herald_record`).Scan(&n))
	require.Equal(t, 1, n, "only the valid append wrote")
}

// TestHeraldAppendChecksAsGo: names and content types, many of them
// generated from a fixed seed over the characters that matter, are
// accepted or refused by SQL exactly as journal's checks do, with the
// same reason.
func TestHeraldAppendChecksAsGo(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	rng := rand.New(rand.NewPCG(18, 7))
	pick := func(alphabet []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}

	names := []string{"a", "a b", "\x01", "ü\u00a0x", "x\u2029", "\u200b", "\u180e", "a\u2007b", "\U0001F600"}
	nameChars := []string{"a", "/", "ü", " ", "\t", "\x7f", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u202f", "\u205f", "\u3000", "\ufeff", "\U0001F600", "\u00ad"}
	for range 300 {
		names = append(names, pick(nameChars, 1+rng.IntN(6)))
	}
	for _, name := range names {
		require.Equal(t, goReason(t, journal.ValidateStream(name)),
			sqlReason(t, c, `SELECT herald_check_name('stream', $1, 200, false)`, name), "stream %q", name)
		require.Equal(t, goReason(t, journal.ValidateID("id", name)),
			sqlReason(t, c, `SELECT herald_check_name('id', $1, 1024, true)`, name), "id %q", name)
	}

	types := []string{
		"application/json", "Application/JSON", "text/plain; charset=utf-8", "text/plain;charset=utf-8;", "text/plain ;",
		"text/plain; charset=\"utf-8\"", `text/plain; a="x\"y"`, `text/plain; a="x\"`, `text/plain; a="x\y"`, `text/plain; a=""`,
		"text/plain; a=1; a=1", "text/plain; a=1; a=2", "text/plain; a*=1; a*=2", "text/plain; a*0=x; a*1=y",
		"text", "text/", "/plain", "text/plain/x", "text/plain x", " text/plain ", "\u00a0text/plain", "text/plain;;",
		"text/plain; a", "text/plain; a=", "text/plain; =1", "text/plain; a=\"x\ny\"", "text/{x}", "ü/x", "text/plain; ü=1",
		"text/plain; a=1 b=2", "text/plain;\u3000a=1", "multipart/form-data; boundary=----x",
	}
	typeChars := []string{"text", "/", "plain", ";", " ", "=", "a", "\"", "\\", "1", "+json", "\t", "*", "(", ",", "ü", "\u00a0", "\n"}
	for range 400 {
		types = append(types, pick(typeChars, 1+rng.IntN(8)))
	}
	for _, ct := range types {
		if ct == "" {
			continue
		}
		_, err := journal.ValidateEntries("s", []journal.Entry{{ID: "i", Kind: "k", ContentType: ct, Payload: []byte("{}")}}, 0)
		// Go quotes the content type with %q, SQL as a JSON string.
		var quoted string
		require.NoError(t, c.QueryRow(ctx, `SELECT to_json($1::text)::text`, ct).Scan(&quoted))
		want := strings.Replace(goReason(t, err), strconv.Quote(ct), quoted, 1)
		require.Equal(t, want, sqlReason(t, c, `SELECT herald_media_type($1)`, ct), "content type %q", ct)
	}
}

// TestHeraldAppendSealing: a final record appended from SQL seals its
// stream for SQL and Go appends alike (HA423 / ErrSealed), before and
// after it is numbered; repeating the final record itself is still a
// no-op; and SQL is refused on a stream sealed from Go.
func TestHeraldAppendSealing(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	_, err := c.Exec(ctx, `SELECT herald_append('task/1', 'a', 'k', '{}'::jsonb)`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT herald_append('task/1', 'end', 'k', '{}'::jsonb, final => true)`)
	require.NoError(t, err)

	sealed := func(id, msg string) {
		t.Helper()
		_, err := c.Exec(ctx, `SELECT herald_append('task/1', $1, 'k', '{}'::jsonb)`, id)
		pe := pgErr(t, err)
		require.Equal(t, "HA423", pe.Code)
		require.Equal(t, "stream", pe.ColumnName)
		require.Equal(t, msg, pe.Message)
	}
	sealed("late", `herald_append: stream "task/1" is sealed by a final record not yet numbered`)
	tx := openTx(t, d.s)
	_, err = d.s.AppendTx(ctx, tx, "task/1", entry("late-go"))
	require.ErrorIs(t, err, journal.ErrSealed)
	require.NoError(t, tx.Rollback(ctx))

	require.Equal(t, 2, sequence(t, d.s))
	sealed("late", `herald_append: stream "task/1" is sealed by its final record #2`)
	_, err = c.Exec(ctx, `SELECT herald_append('task/1', 'end', 'k', '{}'::jsonb, final => true)`)
	require.NoError(t, err, "the final record again is the same record")

	_, err = d.s.Append(ctx, "task/2", journal.Entry{ID: "go-end", Kind: "k", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT herald_append('task/2', 'after', 'k', '{}'::jsonb)`)
	require.Equal(t, "HA423", pgErr(t, err).Code)
	require.Equal(t, []string{"a", "end"}, readIDs(t, d.s, "task/1"))
}

// TestHeraldAppendIsDelivered: a record appended from plain SQL reaches a
// registration's receiver, with its payload and content type, through the
// worker as any record does.
func TestHeraldAppendIsDelivered(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	type got struct{ ct, body, traceparent, tracestate string }
	var (
		mu    sync.Mutex
		bodys []got
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodys = append(bodys, got{r.Header.Get("Content-Type"), string(b), r.Header.Get("Traceparent"), r.Header.Get("Tracestate")})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	_, err := d.s.Register(ctx, store.Registration{Stream: "orders/1", ID: "shop", Namespace: "webhook", URL: srv.URL + "/hook"})
	require.NoError(t, err)
	w, err := push.NewWorker(d.s, d.s, storetest.HTTPTransport{Client: srv.Client(), Worker: "w"}, storetest.PayloadProjection{}, push.WithOwner("w"))
	require.NoError(t, err)

	c := d.conn(t)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT herald_append('orders/1', 'evt-1', 'order.created', '{"total":42}'::jsonb,
		traceparent => $1, tracestate => 'shop=1')`, traceTP)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT herald_append('orders/1', 'evt-2', 'order.note', 'thanks'::text)`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	rep, err := w.RunOnce(ctx, at(0), 10) // Due numbers them first
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deliveries)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodys, 2)
	child := bodys[0].traceparent
	require.NoError(t, journal.ValidateTraceparent("traceparent", child))
	require.Equal(t, traceTP[:36], child[:36], "the delivery is in the append's trace")
	require.Equal(t, traceTP[52:], child[52:], "with its flags")
	require.NotEqual(t, traceTP, child, "as a child: its own span id")
	bodys[0].traceparent = ""
	require.Equal(t, []got{{"application/json", `{"total": 42}`, "", "shop=1"}, {"text/plain; charset=utf-8", "thanks", "", ""}}, bodys)
}

// TestHeraldAppendRefusesReservedNames: every overload refuses a stream
// under journal.ReservedPrefix and an id starting journal.ReservedIDPrefix,
// as AppendTx does: HA400, the field in the error's column, Go's message,
// the checks in Go's order, and nothing written. Names that merely look
// alike are accepted by both.
func TestHeraldAppendRefusesReservedNames(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	overloads := []string{
		`SELECT herald_append($1, $2, 'k', '{}'::jsonb)`,
		`SELECT herald_append($1, $2, 'k', '{}'::json)`,
		`SELECT herald_append($1, $2, 'k', 'hi'::text)`,
		`SELECT herald_append($1, $2, 'k', '\x00'::bytea)`,
	}
	refused := []struct {
		name, stream, id, field string
	}{
		{"herald's events", store.EventsStream, "evt-1", "stream"},
		{"any herald/ stream", journal.ReservedPrefix + "x", "evt-1", "stream"},
		{"an event's id", "orders/1", journal.ReservedIDPrefix + "parked:1", "id"},
		{"a bad stream before a reserved id", "a b", journal.ReservedIDPrefix + "x", "stream"},
		{"a bad reserved stream: its name first", journal.ReservedPrefix + "a b", "evt-1", "stream"},
		{"a bad reserved id: its name first", "orders/1", journal.ReservedIDPrefix + "\n", "id"},
	}
	for _, tc := range refused {
		_, goErr := journal.ValidateEntries(tc.stream, []journal.Entry{{ID: tc.id, Kind: "k", Payload: []byte(`{}`)}}, 0)
		requireRefusedAsGo(t, c, goErr, tc.field, tc.name, overloads, tc.stream, tc.id)
	}
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM herald_record`).Scan(&n))
	require.Zero(t, n, "nothing refused was written")

	for i, name := range []struct{ stream, id string }{
		{"herald", "herald-event"}, {"heraldx/y", "herald-events:1"}, {"x/herald/events", "x-herald-event:1"},
	} {
		_, goErr := journal.ValidateEntries(name.stream, []journal.Entry{{ID: name.id, Kind: "k", Payload: []byte(`{}`)}}, 0)
		require.NoError(t, goErr)
		for j, sql := range overloads {
			_, err := c.Exec(ctx, sql, name.stream, fmt.Sprintf("%s-%d-%d", name.id, i, j))
			require.NoError(t, err, "%v: %s", name, sql)
		}
	}

	// Every herald function runs with its search_path pinned, pg_temp last
	// (migrations/001_init.up.sql), or has a SQL-standard body, bound when
	// it was created.
	rows, err := c.Query(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.proname LIKE 'herald\_%' AND p.prosqlbody IS NULL
		  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) cfg WHERE cfg ~ '^search_path=pg_catalog, .*, pg_temp$')`)
	require.NoError(t, err)
	unpinned, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, unpinned, "functions without a pinned search_path")
}

// traceTP is a valid traceparent (W3C Trace Context's example).
const traceTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestHeraldAppendTraceContext: herald_append's traceparent and tracestate
// are stored with the record as AppendTx stores them (the empty string
// for none, the default), on every overload, positional and named; they are not content,
// so an id appended again with another trace context is the same record,
// its first trace context kept.
func TestHeraldAppendTraceContext(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	tp2 := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	for i, sql := range []string{
		`SELECT herald_append('s', $1, 'k', '{}'::jsonb, traceparent => $2, tracestate => $3)`,
		`SELECT herald_append('s', $1, 'k', '{}'::json, 'application/json', false, $2, $3)`,
		`SELECT herald_append('s', $1, 'k', 'hi'::text, NULL, NULL, $2, $3)`,
		`SELECT herald_append(stream => 's', id => $1, kind => 'k', payload => '\x00'::bytea, tracestate => $3, traceparent => $2)`,
		`SELECT herald_append('s', $1, 'k', 'untyped is text', traceparent => $2, tracestate => $3)`,
	} {
		id := fmt.Sprintf("traced-%d", i)
		var got string
		require.NoError(t, c.QueryRow(ctx, sql, id, traceTP, "a=1,b=2").Scan(&got), sql)
		require.Equal(t, id, got)
		sequence(t, d.s) // Lookup finds numbered records
		r, err := d.s.Lookup(ctx, id)
		require.NoError(t, err)
		require.Equal(t, traceTP, r.Traceparent, sql)
		require.Equal(t, "a=1,b=2", r.Tracestate, sql)
	}
	_, err := c.Exec(ctx, `SELECT herald_append('s', 'only-parent', 'k', '{}'::jsonb, traceparent => $1)`, tp2)
	require.NoError(t, err)
	for _, sql := range []string{
		`SELECT herald_append('s', 'plain', 'k', '{}'::jsonb)`,
		`SELECT herald_append('s', 'nulls', 'k', '{}'::jsonb, traceparent => NULL, tracestate => NULL)`,
		`SELECT herald_append('s', 'empty', 'k', '{}'::jsonb, traceparent => '', tracestate => '')`,
		`SELECT herald_append('s', 'untyped', 'k', 'hi')`,
		`SELECT herald_append('s', 'untyped-all', 'k', 'hi', NULL, NULL, NULL, NULL)`,
	} {
		_, err := c.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}

	// Go's append of the same entry stores the same columns.
	_, err = d.s.Append(ctx, "s", journal.Entry{ID: "from-go", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	rows, err := c.Query(ctx, `SELECT id || ' [' || traceparent || '] [' || tracestate || ']' FROM herald_record
		WHERE id IN ('only-parent', 'plain', 'nulls', 'empty', 'from-go') ORDER BY id`)
	require.NoError(t, err)
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"empty [] []", "from-go [] []", "nulls [] []", "only-parent [" + tp2 + "] []", "plain [] []"}, stored)

	// Again with another trace context, or none: the same record.
	var got string
	require.NoError(t, c.QueryRow(ctx, `SELECT herald_append('s', 'traced-0', 'k', '{}'::jsonb, traceparent => $1)`, tp2).Scan(&got))
	require.Equal(t, "traced-0", got)
	require.NoError(t, c.QueryRow(ctx, `SELECT herald_append('s', 'plain', 'k', '{}'::jsonb, traceparent => $1, tracestate => 'x=y')`, tp2).Scan(&got))
	require.Equal(t, "plain", got)
	tx := openTx(t, d.s)
	_, err = d.s.AppendTx(ctx, tx, "s", journal.Entry{ID: "traced-1", Kind: "k", Payload: []byte(`{}`), Traceparent: tp2})
	require.NoError(t, err, "Go agrees: trace context is not content")
	require.NoError(t, tx.Commit(ctx))

	sequence(t, d.s)
	var rowsN int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM herald_record`).Scan(&rowsN))
	require.Equal(t, 12, rowsN, "the repeats appended nothing")
	recs, err := d.s.Read(ctx, "s", 1, 20, 0)
	require.NoError(t, err)
	byID := map[string]journal.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	require.Len(t, byID, 12)
	require.Equal(t, "text/plain; charset=utf-8", byID["traced-4"].ContentType, "an untyped payload is text")
	require.Equal(t, "text/plain; charset=utf-8", byID["untyped-all"].ContentType)
	require.Equal(t, traceTP, byID["traced-0"].Traceparent, "the first trace context stays")
	require.Equal(t, "a=1,b=2", byID["traced-0"].Tracestate)
	require.Equal(t, traceTP, byID["traced-1"].Traceparent)
	require.Equal(t, "", byID["plain"].Traceparent)
	require.Equal(t, "", byID["plain"].Tracestate)
	require.Equal(t, tp2, byID["only-parent"].Traceparent)

	// The digest is journal.Digest's, without the trace context.
	var dig []byte
	require.NoError(t, c.QueryRow(ctx, `SELECT digest FROM herald_record WHERE id = 'traced-0'`).Scan(&dig))
	want := journal.Digest("s", journal.Entry{ID: "traced-0", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
	require.Equal(t, want[:], dig)
}

// TestHeraldAppendTraceValidation: each invalid trace context is refused
// as journal.ValidateEntries refuses it (HA400, the field in the error's
// column, Go's message), after the payload's checks, on every overload, and
// nothing is written. Generated values, from a fixed seed over the
// characters Go's %q escapes or keeps, get Go's reason word for word.
func TestHeraldAppendTraceValidation(t *testing.T) {
	ctx := t.Context()
	d := newSQLDB(t)
	c := d.conn(t)
	overloads := []string{
		`SELECT herald_append('s', 'i', 'k', '{}'::jsonb, traceparent => $1, tracestate => $2)`,
		`SELECT herald_append('s', 'i', 'k', '{}'::json, 'application/json', false, $1, $2)`,
		`SELECT herald_append('s', 'i', 'k', 'hi'::text, traceparent => $1, tracestate => $2)`,
		`SELECT herald_append('s', 'i', 'k', '\x00'::bytea, NULL, NULL, $1, $2)`,
	}
	cases := []struct{ name, tp, ts, field string }{
		{"too short", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", "", "traceparent"},
		{"three parts", "00-4bf92f3577b34da6a3ce929d0e0e4736x00f067aa0ba902b7-01", "", "traceparent"},
		{"version", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "traceparent"},
		{"upper-case trace id", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", "traceparent"},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "traceparent"},
		{"short parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736a-0f067aa0ba902b7-01", "", "traceparent"},
		{"zero parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", "traceparent"},
		{"flags", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", "", "traceparent"},
		{"long and hostile", strings.Repeat("é\"\\\n", 30), "", "traceparent"},
		{"tracestate without traceparent", "", "a=1", "tracestate"},
		{"tracestate too long", traceTP, strings.Repeat("a", journal.MaxTracestateBytes+1), "tracestate"},
		{"tracestate with a tab", traceTP, "a=1,\tb=2", "tracestate"},
		{"tracestate with é", traceTP, "a=é", "tracestate"},
		{"tracestate with DEL", traceTP, "a=\x7f", "tracestate"},
	}
	for _, tc := range cases {
		_, goErr := journal.ValidateEntries("s", []journal.Entry{{ID: "i", Kind: "k", Payload: []byte(`{}`), Traceparent: tc.tp, Tracestate: tc.ts}}, 0)
		requireRefusedAsGo(t, c, goErr, tc.field, tc.name, overloads, tc.tp, tc.ts)
	}
	// A NULL traceparent is none, so a tracestate with it is refused too.
	_, err := c.Exec(ctx, `SELECT herald_append('s', 'i', 'k', '{}'::jsonb, tracestate => 'a=1')`)
	pe := pgErr(t, err)
	require.Equal(t, "HA400", pe.Code)
	require.Equal(t, "tracestate", pe.ColumnName)
	require.Equal(t, "herald_append: invalid tracestate: is set without a traceparent", pe.Message)
	// The payload is checked first, as in Go.
	_, err = c.Exec(ctx, `SELECT herald_append('s', 'i', 'k', 'nope'::text, 'application/json', traceparent => 'x')`)
	require.Equal(t, "payload", pgErr(t, err).ColumnName)
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM herald_record`).Scan(&n))
	require.Zero(t, n, "nothing refused was written")

	checkTrace := func(tp, ts string) (goWants, sqlSays string) {
		err := journal.ValidateTraceparent("traceparent", tp)
		if err == nil {
			err = journal.ValidateTracestate("tracestate", ts, tp)
		}
		return goReason(t, err), sqlReason(t, c, `SELECT herald_check_trace($1, $2)`, tp, ts)
	}
	rng := rand.New(rand.NewPCG(20, 11))
	chars := []string{"0", "0", "a", "f", "9", "-", "-", "F", "g", " ", "\"", "\\", "\n", "\t", "\x01", "\x1b", "\x7f", "é", "\u0085",
		"\u00a0", "\u00ad", "\u200b", "\u2028", "\u3000", "\ufeff", "\ue000", "\U0001F600", "…", "ü", "\u0301", "\U000F0001"}
	pick := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	var tps []string
	for range 150 {
		parts := []string{"00", hex(32), hex(16), "01"}
		k := rng.IntN(4)
		parts[k] = pick(len(parts[k]) / (1 + rng.IntN(2)))
		if rng.IntN(3) == 0 { // a valid shape but for a few characters
			tp := []rune(strings.Join(parts, "-"))
			tp[rng.IntN(len(tp))] = []rune(chars[rng.IntN(len(chars))])[0]
			tps = append(tps, string(tp))
		} else {
			tps = append(tps, strings.Join(parts, "-"))
		}
		tps = append(tps, pick(1+rng.IntN(70)))
	}
	seen := map[string]bool{}
	for _, tp := range tps {
		want, got := checkTrace(tp, "")
		require.Equal(t, want, got, "traceparent %q", tp)
		for _, s := range []string{`\x`, `\u`, `\U`, `\"`, `\n`, "…", "é", "trace id", "parent id", "flags", "version"} {
			seen[s] = seen[s] || strings.Contains(want, s)
		}
	}
	for s, ok := range seen {
		require.True(t, ok, "the generated traceparents have a reason with %s", s)
	}
	for range 150 {
		ts := pick(1 + rng.IntN(20))
		want, got := checkTrace(traceTP, ts)
		require.Equal(t, want, got, "tracestate %q", ts)
	}
}

// TestHeraldAppendFromPsql runs herald_append from outside Go: psql, the
// PostgreSQL client, against the test cluster, with the README's example
// (a committed transaction), then a rolled-back transaction, a repeat, an
// append with trace context, and three refused appends with their SQLSTATEs. Without psql it fails
// (./test.sh installs it with the server), it does not skip.
func TestHeraldAppendFromPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql, PostgreSQL's client, is needed for this test: run ./test.sh, which installs it, or apt-get install postgresql-client")
	d := newSQLDB(t)
	cmd := exec.CommandContext(t.Context(), psql, "-X", "-A", "-t", "-d", d.url, "-f", "-")
	script := "\\set ON_ERROR_STOP 1\nCREATE TABLE orders (id int PRIMARY KEY, total int NOT NULL);\n" + readmeSQL(t, "psql", "TestHeraldAppendFromPsql") + `BEGIN;
INSERT INTO orders VALUES (1002, 7);
SELECT herald_append('order/1002', 'order-1002-created', 'order.created', '{"id":1002,"total":7}'::jsonb);
ROLLBACK;
SELECT herald_append('order/1001', 'order-1001-created', 'order.created', '{"id":1001,"total":42}'::jsonb) AS again;
SELECT herald_append('order/1003', 'order-1003-created', 'order.created', '{"id":1003}'::jsonb,
                     traceparent => '` + traceTP + `', tracestate => 'shop=7');
\set ON_ERROR_STOP 0
\set VERBOSITY verbose
SELECT herald_append('order/1001', 'evt-3', 'order created', '{}'::jsonb);
SELECT herald_append('order/1001', 'order-1001-created', 'order.created', '{"id":1001,"total":43}'::jsonb);
SELECT herald_append('order/1001', 'evt-4', 'order.note', '{}'::jsonb, traceparent => '00-abc');
`
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "psql: %s", stderr.String())

	require.Equal(t, "BEGIN\nINSERT 0 1\norder-1001-created\nCOMMIT\nBEGIN\nINSERT 0 1\norder-1002-created\nROLLBACK\norder-1001-created\norder-1003-created\n",
		strings.ReplaceAll(stdout.String(), "CREATE TABLE\n", ""))
	require.Contains(t, stderr.String(), "ERROR:  HA400: herald_append: invalid kind: has whitespace U+0020 at byte 5")
	require.Contains(t, stderr.String(), `ERROR:  HA409: herald_append: record id "order-1001-created" already exists in order/1001, waiting to be numbered, with a different payload`)

	require.Contains(t, stderr.String(), `ERROR:  HA400: herald_append: invalid traceparent: "00-abc" is not version-traceid-parentid-flags`)

	require.Equal(t, 2, sequence(t, d.s), "two records committed")
	traced, err := d.s.Lookup(t.Context(), "order-1003-created")
	require.NoError(t, err)
	require.Equal(t, traceTP, traced.Traceparent)
	require.Equal(t, "shop=7", traced.Tracestate)
	require.Equal(t, []string{"order-1001-created"}, readIDs(t, d.s, "order/1001"))
	require.Zero(t, head(t, d.s, "order/1002"), "the rolled-back one left nothing")
	var orders int
	require.NoError(t, d.s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM orders`).Scan(&orders))
	require.Equal(t, 1, orders)
}

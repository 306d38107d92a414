package main_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// With no daemon running, records an application committed (AppendTx, and
// herald_append from SQL) wait to be numbered; status, records, streams and
// record-status count and show them, and ask whether a daemon runs. Once a
// sweep numbered them, they are records behind as any other.
func TestABacklogWaitingToBeNumberedIsVisible(t *testing.T) {
	ctx := t.Context()
	db := pgtest.NewDatabase(t)
	h := newHerald(t, db)
	h.ok("migrate", "up")
	hourAgo := func() time.Time { return time.Now().Add(-time.Hour) } // the application's records are an hour old
	st, err := postgres.Open(ctx, db, postgres.WithClock(hourAgo), postgres.WithKeyring(keyring))
	require.NoError(t, err)
	defer st.Close()
	recv := newReceiver(t)
	h.ok("register", "--stream", "orders/1", "--id", "billing", "--namespace", "webhook", "--url", recv.URL+"/billing", "--secret", secret)
	require.NoError(t, pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		for i := range 11 {
			if _, err := st.AppendTx(ctx, tx, "orders/1", journal.Entry{ID: fmt.Sprintf("evt-%d", i), Kind: "order.created", Payload: []byte(`{}`)}); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err = st.Pool().Exec(ctx, `SELECT herald_append('orders/1', 'from-sql', 'order.paid', '{}'::jsonb)`)
	require.NoError(t, err)

	out := h.ok("status")
	require.Contains(t, out, "12 records waiting to be numbered")
	require.Contains(t, out, "is a daemon running?")
	var status struct {
		Unnumbered store.Unnumbered `json:"unnumbered"`
	}
	h.json(&status, "status")
	require.Equal(t, uint64(12), status.Unnumbered.Records)
	require.Equal(t, 1, status.Unnumbered.Streams)

	out = h.ok("records", "--stream", "orders/1")
	require.Contains(t, out, "no records from #1 (head 0)")
	require.Contains(t, out, "12 records past #0 committed but waiting to be numbered: is a daemon running?")
	var page struct {
		Unnumbered uint64 `json:"unnumbered"`
	}
	h.json(&page, "records", "--stream", "orders/1")
	require.Equal(t, uint64(12), page.Unnumbered)
	var streams []struct {
		Stream     string `json:"stream"`
		Unnumbered uint64 `json:"unnumbered"`
	}
	require.Regexp(t, `orders/1\s+0\s+-\s+1\s+0\s+0 bytes\s+1\s+12\n`, h.ok("streams"))
	h.json(&streams, "streams")
	require.Len(t, streams, 1)
	require.Equal(t, uint64(12), streams[0].Unnumbered)

	out = h.ok("record-status", "--id", "from-sql")
	require.Contains(t, out, "Record from-sql of stream orders/1 (kind order.paid")
	require.Contains(t, out, "is committed but waiting to be numbered")
	require.Contains(t, out, "Not yet acknowledged by the 1 registration of its stream")
	require.Contains(t, out, "billing")
	require.NotContains(t, out, "not found")
	var rs struct {
		Unnumbered      bool              `json:"unnumbered"`
		Record          struct{ Seq int } `json:"record"`
		NotAcknowledged []json.RawMessage `json:"not_acknowledged"`
	}
	h.json(&rs, "record-status", "--id", "evt-3")
	require.True(t, rs.Unnumbered)
	require.Zero(t, rs.Record.Seq)
	require.Len(t, rs.NotAcknowledged, 1)
	r := h.run("", "record-status", "--stream", "orders/1", "--seq", "5")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "12 more are waiting to be numbered; is a daemon running?")

	r = h.run(`{}`, "append", "--stream", "orders/1", "--id", "evt-3", "--kind", "order.cancelled")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, `already exists in orders/1, waiting to be numbered, with a different kind`)
	require.NotContains(t, r.stderr, "#0")

	rep := sweep(h, time.Now().UTC().Format(time.RFC3339), 0) // a sweep numbers them first
	require.Equal(t, 12, rep.Deliveries)
	out = h.ok("status")
	require.NotContains(t, out, "waiting to be numbered")
	status.Unnumbered = store.Unnumbered{}
	h.json(&status, "status")
	require.Equal(t, store.Unnumbered{}, status.Unnumbered)
	rs.Unnumbered = false
	h.json(&rs, "record-status", "--id", "from-sql")
	require.False(t, rs.Unnumbered)
	require.Equal(t, 12, rs.Record.Seq)
}

package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// resend queues an acknowledged record; the next sweep sends it once with
// its original id and the cursor stays; the answer is in herald evidence.
// A record not acknowledged, one of a kind the registration does not want
// (it was never sent), a seq 0 and an unknown registration are refused with
// exit 2, naming the flag, nothing queued.
func TestResendSendsOneAcknowledgedRecordAgain(t *testing.T) {
	var (
		mu  sync.Mutex
		ids []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, r.Header.Get("Webhook-Id"))
	}))
	t.Cleanup(srv.Close)
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", srv.URL, "--secret", goodSecret)
	for _, id := range []string{"e1", "e2", "e3"} {
		heraldOK(t, db, "{}", "append", "--stream", "s", "--id", id, "--kind", "k")
	}
	sweep := func(at string) string {
		r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", at, "--allow-http", "--allow-private-network")
		require.Equal(t, ExitOK, r.code, r.stderr)
		return r.stdout
	}
	sweep("2026-03-15T11:00:00Z")
	require.Equal(t, []string{"e1", "e2", "e3"}, got())

	out := heraldOK(t, db, "", "resend", "--stream", "s", "--id", "r", "--seq", "2", "--by", "alice")
	require.Contains(t, out, "Queued a resend of #2 to stream=s id=r for alice: the next sweep of webhook sends it once, out of band; its cursor stays at 4.")
	require.Contains(t, out, "--stream s --id r (event resent)")
	// Asked again while queued: the queued resend stays, and goes out once.
	require.Equal(t, "#2 is queued already to stream=s id=r: that resend stays and goes out once, at the next sweep of webhook; nothing changed.\n",
		heraldOK(t, db, "", "resend", "--stream", "s", "--id", "r", "--seq", "2", "--by", "bob"))
	var v operator.ResendView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "resend", "--stream", "s", "--id", "r", "--seq", "2", "--json")), &v))
	require.Equal(t, uint64(2), v.Seq)
	require.Equal(t, "operator", v.By, "no --by and no $USER")
	require.Equal(t, uint64(4), v.NextSeq)
	require.False(t, v.Queued, "queued already")

	require.Contains(t, sweep("2026-03-15T11:01:00Z"), "1 record resent out of band (herald evidence has each answer).")
	require.Equal(t, []string{"e1", "e2", "e3", "e2"}, got(), "once, though asked twice")
	var regs []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, uint64(4), regs[0].NextSeq)
	var evs []store.Evidence
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "r", "--json")), &evs))
	require.Len(t, evs, 1)
	require.Equal(t, store.EventResent, evs[0].Event)
	require.Equal(t, uint64(2), evs[0].Seq)
	require.Equal(t, 200, evs[0].Status)
	require.Equal(t, "resent for alice", evs[0].Error)
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "r"), "resent for alice")

	heraldOK(t, db, "", "register", "--stream", "s", "--id", "others", "--namespace", "webhook", "--url", srv.URL, "--secret", goodSecret,
		"--kinds", "other.*", "--from-seq", "4")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stream", "s", "--id", "others", "--seq", "2"}, "invalid --seq: #2 is a record of kind k, which this registration does not want (its kinds: other.*)"},
		{[]string{"--stream", "s", "--id", "r", "--seq", "4"}, "invalid --seq: #4 is at or past the cursor (4): it has not been acknowledged"},
		{[]string{"--stream", "s", "--id", "r", "--seq", "0"}, "--seq"},
		{[]string{"--stream", "s", "--id", "r", "--seq", "1", "--by", "a\nb"}, "--by"},
		{[]string{"--stream", "s", "--id", "nobody", "--seq", "1"}, "no registration stream=s id=nobody"},
		{[]string{"--stream", "s", "--id", "r"}, "--seq"},
	} {
		r := runCLI(t, db, "", append([]string{"resend"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%v", tc.args)
	}
	sweep("2026-03-15T11:02:00Z")
	require.Len(t, got(), 4, "nothing was queued by the refusals")
}

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/store"
)

// register names, at once, every rule of the network guard the URL breaks and
// the flag that lifts it.
func TestRegisterWarnsOfEveryRefusal(t *testing.T) {
	db := newDB(t)
	reg := func(id, url string) cliRun {
		return runCLI(t, db, "", "register", "--stream", "s", "--id", id, "--namespace", "webhook",
			"--url", url, "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	}
	r := reg("local", "http://127.0.0.2:8080/hooks")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "scheme http is not allowed: https only; herald run/sweep --allow-http")
	require.Contains(t, r.stderr, "127.0.0.2 is in 127.0.0.0/8 (loopback); herald run/sweep --allow-private-network")
	require.Equal(t, 2, strings.Count(r.stderr, "note: "), r.stderr)

	r = reg("name", "https://localhost:8443/hooks")
	require.Contains(t, r.stderr, "host localhost (127.0.0.1) is in 127.0.0.0/8 (loopback); herald run/sweep --allow-private-network")

	r = reg("docs", "https://192.0.2.10/hooks")
	require.Contains(t, r.stderr, "192.0.2.10 is in 192.0.2.0/24 (documentation")
	require.NotContains(t, r.stderr, "--allow-", "no flag opens a documentation range")

	r = reg("public", "https://hooks.example/x")
	require.NotContains(t, r.stderr, "note:")
}

// register --kinds is validated, naming the flag, stored and shown.
func TestRegisterKinds(t *testing.T) {
	db := newDB(t)
	args := func(kinds string) []string {
		return []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--kinds", kinds}
	}
	r := runCLI(t, db, "", args("order.*.paid")...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --kinds: pattern "order.*.paid" may have one "*", at its end`)
	requireNoDB(t, db, "a refused register opened nothing")

	heraldOK(t, db, "", args("order.*, invoice.paid")...)
	out := heraldOK(t, db, "", "registrations")
	require.Contains(t, out, "KINDS")
	require.Contains(t, out, "order.*,invoice.paid")
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, []any{"order.*", "invoice.paid"}, regs[0]["kinds"])
}

// register --window is validated, naming the flag, stored, shown and kept
// by a re-register only when given again.
func TestRegisterWindow(t *testing.T) {
	db := newDB(t)
	args := func(extra ...string) []string {
		return append([]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)
	}
	for _, bad := range []string{"0", "-1", "65", "many"} {
		r := runCLI(t, db, "", args("--window", bad)...)
		require.Equal(t, ExitUsage, r.code, "--window %s: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "--window", bad)
		requireNoDB(t, db, "a refused register opened nothing")
	}

	require.Contains(t, heraldOK(t, db, "", args("--window", "16")...), "window 16")
	out := heraldOK(t, db, "", "registrations")
	require.Contains(t, out, "WINDOW")
	window := func() any {
		var regs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
		require.Len(t, regs, 1)
		return regs[0]["window"]
	}
	require.Equal(t, 16.0, window())

	r := runCLI(t, db, "", args("--window", "65")...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Equal(t, 16.0, window(), "a refused re-register changes nothing")

	heraldOK(t, db, "", args()...)
	require.Equal(t, 1.0, window(), "re-registering without --window: strict order again")
}

// A window above the default --max-per-host is capped by it, and register,
// registrations and status say so; one within it gets no note.
func TestWindowAboveMaxPerHostIsSaid(t *testing.T) {
	db := newDB(t)
	register := func(id, window string) cliRun {
		r := runCLI(t, db, "", "register", "--stream", "s", "--id", id, "--namespace", "webhook", "--url", "https://hooks.example/"+id,
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--window", window)
		require.Equal(t, ExitOK, r.code, r.stderr)
		return r
	}
	r := register("far", "16")
	require.Contains(t, r.stderr, "note: window 16 is above the default --max-per-host (4)")
	require.Contains(t, r.stderr, "4 of this registration's are sent at a time unless the workers run with --max-per-host 16")
	require.Empty(t, register("near", "4").stderr, "a window the cap holds gets no note")

	var answer struct{ Warnings []string }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "register", "--stream", "s", "--id", "far", "--namespace", "webhook",
		"--url", "https://hooks.example/far", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--window", "16", "--json")), &answer))
	require.Len(t, answer.Warnings, 1)
	require.Contains(t, answer.Warnings[0], "window 16 is above the default --max-per-host (4)")

	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "e1", "--kind", "k")
	for _, args := range [][]string{{"registrations"}, {"status"}} {
		out := heraldOK(t, db, "", args...)
		require.Contains(t, out, "16 (4 at once)", args)
		require.Contains(t, out, "a window above the default --max-per-host of herald run and sweep (4)", args)
		require.NotContains(t, out, " 4 (4 at once)", args)
	}
}

// register --from-seq 0 is refused (seqs are 1-based), not taken as 1.
func TestRegisterFromSeqZeroIsRefused(t *testing.T) {
	db := newDB(t)
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--from-seq", "0")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--from-seq 0 must be 1 or more")
	requireNoDB(t, db)
}

// A new registration below a stream's low-water mark is refused, naming the
// --from-seq that would be taken; nothing is stored.
func TestRegisterBelowThePrunedRecordsNamesFromSeq(t *testing.T) {
	db := newDB(t)
	for _, id := range []string{"a", "b", "c"} {
		r := runCLI(t, db, `{"n":1}`, "append", "--stream", "s", "--id", id, "--kind", "k")
		require.Zero(t, r.code, r.stderr)
	}
	r := runCLI(t, db, "", "prune", "--retain", "0s", "--at", "2030-01-01T00:00:00Z")
	require.Zero(t, r.code, r.stderr)
	register := []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	r = runCLI(t, db, "", register...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "#1 was pruned")
	require.Contains(t, r.stderr, "start it at --from-seq 4 or later")
	r = runCLI(t, db, "", "registrations", "--json")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, `"id": "r"`)
	r = runCLI(t, db, "", append(register, "--from-seq", "4")...)
	require.Zero(t, r.code, r.stderr)
}

// register's config errors name the flag that was given, not the stored
// config's key, and the flag's position when it repeats; nothing is stored.
func TestRegisterConfigErrorsNameTheFlag(t *testing.T) {
	db := newDB(t)
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook",
		"--url", "https://hooks.example/x", "--secret", "bogus", "--secret", goodSecret, "--secret", goodSecret)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --secret (the 1st): does not start with "whsec_"`)
	require.Contains(t, r.stderr, "invalid --secret (the 3rd): repeats the 2nd")
	require.NotContains(t, r.stderr, "config.")
	require.NotContains(t, r.stderr, "bogus", "a secret is never repeated")

	r = runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "cloudevents", "--url", "https://hooks.example/x")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --source: is missing")
	require.NoFileExists(t, db, "a refused register opens no database")
}

// Every key of a namespace's config is a flag of register, so that build
// refuses it for the other namespaces and asFlags names it.
func TestNamespaceFlagsAreRegisterFlags(t *testing.T) {
	e := &env{}
	register := e.cobra(newRegister(e))
	for ns, w := range namespaces {
		require.NotEmpty(t, w.flags(), ns)
		for _, f := range w.flags() {
			require.NotNil(t, register.Flags().Lookup(f), "%s's --%s", ns, f)
		}
	}
}

// register --envelope belongs to the webhook namespace: given to another,
// or with a value that is not a boolean, it is a usage error naming the
// flag, and nothing is written.
func TestRegisterEnvelopeIsRefusedOutsideTheWebhookNamespace(t *testing.T) {
	db := newDB(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace", "cloudevents", "--source", "/orders", "--envelope"}, "--envelope does not apply to the cloudevents namespace"},
		{[]string{"--namespace", "a2a", "--envelope"}, "--envelope does not apply to the a2a namespace"},
		{[]string{"--namespace", "webhook", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--envelope=maybe"}, "--envelope"},
	} {
		args := append([]string{"register", "--stream", "s", "--id", "r", "--url", "https://hooks.example/x"}, c.args...)
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		requireNoDB(t, db, "%v: a refused register opened nothing", c.args)
	}
}

// register --envelope reaches the wire: a sweep sends the record to a
// loopback receiver as {"type", "timestamp", "data"}, with its kind, stream
// and seq in the headers; registered again without the flag, the payload
// alone.
func TestRegisterEnvelopeReachesTheWire(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	db := newDB(t)
	register := func(extra ...string) {
		heraldOK(t, db, "", append([]string{"register", "--stream", "orders/1001", "--id", "billing", "--namespace", "webhook",
			"--url", srv.URL, "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)...)
	}
	sweep := func(at string) got {
		heraldOK(t, db, "", "sweep", "--namespace", "webhook", "--at", at, "--allow-http", "--allow-private-network")
		require.Len(t, received, 1)
		return <-received
	}

	register("--envelope")
	heraldOK(t, db, `{"total":42}`, "append", "--stream", "orders/1001", "--id", "evt-1", "--kind", "order.created")
	g := sweep("2026-03-15T11:00:00Z")
	var env struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(g.body, &env), "%s", g.body)
	require.Equal(t, "order.created", env.Type)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, env.Timestamp)
	require.JSONEq(t, `{"total":42}`, string(env.Data))
	require.Equal(t, "order.created", g.header.Get("Herald-Kind"))
	require.Equal(t, "orders/1001", g.header.Get("Herald-Stream"))
	require.Equal(t, "1", g.header.Get("Herald-Seq"))

	register() // without --envelope: the payload alone
	heraldOK(t, db, `{"total":43}`, "append", "--stream", "orders/1001", "--id", "evt-2", "--kind", "order.paid")
	g = sweep("2026-03-15T11:01:00Z")
	require.JSONEq(t, `{"total":43}`, string(g.body))
	require.Equal(t, "order.paid", g.header.Get("Herald-Kind"))
	require.Equal(t, "2", g.header.Get("Herald-Seq"))
}

// A span out of its flag's range is refused naming the range, once, not
// called a malformed number of days.
func TestSpanFlagsNameTheirRange(t *testing.T) {
	db := newDB(t)
	r := runCLI(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--retain-max", "99999d")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --retain-max: "99999d" is out of range: it must be 1h to 3650d`)
	r = runCLI(t, db, "", "prune", "--retain", "-1d")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `invalid --retain: "-1d" is out of range: it must be 0s to 3650d`)
	require.Equal(t, 1, strings.Count(r.stderr, "(5s, 30m, 2h)")+strings.Count(r.stderr, "out of range"), r.stderr)
	requireNoDB(t, db, "a refused command opened nothing")
}

// register --retain-max is validated naming the flag, stored and shown; a
// re-register without it goes back to the namespace's default.
func TestRegisterRetainMax(t *testing.T) {
	db := newDB(t)
	args := func(extra ...string) []string {
		return append([]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)
	}
	for _, bad := range []string{"30m", "-1h", "4000d", "soon", "1.5d"} {
		r := runCLI(t, db, "", args("--retain-max", bad)...)
		require.Equal(t, ExitUsage, r.code, "--retain-max %s: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "retain", bad)
		requireNoDB(t, db, "a refused register opened nothing")
	}
	require.Contains(t, heraldOK(t, db, "", args("--retain-max", "30d")...), "retain-max 30d")
	retain := func() (any, any) {
		var regs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
		require.Len(t, regs, 1)
		return regs[0]["retain_max"], regs[0]["retain_max_default"]
	}
	got, dflt := retain()
	require.Equal(t, []any{"30d", nil}, []any{got, dflt})
	heraldOK(t, db, "", args()...)
	got, dflt = retain()
	require.Equal(t, []any{"90d", true}, []any{got, dflt}, "webhook's default")
}

// register --stream-prefix subscribes: the existing stream (past its head
// with --from head) and a later one are followed, subscriptions shows it as
// one with its streams, unregister --stream-prefix removes every one; bad
// prefixes and flag mixes are refused naming the flag, changing nothing.
// Without --secret a webhook subscription gets one, shown once and kept
// when it is registered again; its retry flags are its registrations'.
func TestRegisterStreamPrefix(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "tenant/42/orders", "--id", "o1", "--kind", "k")
	heraldOK(t, db, "{}", "append", "--stream", "tenant/420/orders", "--id", "x1", "--kind", "k")
	args := func(extra ...string) []string {
		return append([]string{"register", "--id", "t42", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, extra...)
	}
	for _, bad := range [][]string{
		{"--stream-prefix", "tenant/42"}, {"--stream-prefix", "herald/"}, {"--stream-prefix", "tenant/42/", "--stream", "s"},
		{"--stream-prefix", "tenant/42/", "--from", "middle"}, {"--stream", "s", "--from", "head"}, {},
		{"--stream-prefix", "tenant/42/", "--retry-for", "3x"},
	} {
		r := runCLI(t, db, "", args(bad...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "--", bad)
	}
	require.Equal(t, "No subscriptions.\n", heraldOK(t, db, "", "subscriptions"), "refusals change nothing")

	made := func(out string) string { return regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(out) }
	noSecret := []string{"register", "--stream-prefix", "tenant/9/", "--id", "t9", "--namespace", "webhook", "--url", "https://hooks.example/9",
		"--retry-schedule", "5s,5m,2h", "--retry-for", "3d"}
	heraldOK(t, db, "{}", "append", "--stream", "tenant/9/a", "--id", "a1", "--kind", "k")
	secret := made(heraldOK(t, db, "", noSecret...))
	require.NotEmpty(t, secret, "a secret made and shown once")
	require.Empty(t, made(heraldOK(t, db, "", noSecret...)), "registered again: the secret is kept, not shown")
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--stream", "tenant/9/a", "--json")), &regs))
	require.Len(t, regs, 1)
	require.Equal(t, map[string]any{"schedule": []any{"5s", "5m", "2h"}, "for": "3d"}, regs[0]["retry"], "the subscription's retry policy")
	heraldOK(t, db, "", "unregister", "--stream-prefix", "tenant/9/", "--id", "t9")

	out := heraldOK(t, db, "", args("--stream-prefix", "tenant/42/", "--from", "head")...)
	require.Contains(t, out, "Subscribed stream_prefix=tenant/42/ id=t42: webhook to hooks.example:443, following 1 stream (existing streams from past their head")
	heraldOK(t, db, "{}", "append", "--stream", "tenant/42/invoices", "--id", "i1", "--kind", "k")

	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "subscriptions", "--streams", "--json")), &list))
	require.Len(t, list, 1)
	require.Equal(t, []any{"tenant/42/", "t42", "head", 2.0}, []any{list[0]["stream_prefix"], list[0]["id"], list[0]["from"], list[0]["streams"]})
	cursors := map[any]any{}
	for _, r := range list[0]["registrations"].([]any) {
		r := r.(map[string]any)
		cursors[r["stream"]] = r["next_seq"]
	}
	require.Equal(t, map[any]any{"tenant/42/orders": 2.0, "tenant/42/invoices": 1.0}, cursors, "existing: past its head; new: from its first record")
	require.Contains(t, heraldOK(t, db, "", "subscriptions", "--streams"), "tenant/42/invoices")

	require.Contains(t, heraldOK(t, db, "", "unregister", "--stream-prefix", "tenant/42/", "--id", "t42"), "2 registrations removed")
	require.Equal(t, "No subscriptions.\n", heraldOK(t, db, "", "subscriptions"))
	require.Contains(t, heraldOK(t, db, "", "registrations"), "No registrations")
}

// TestRegisterStreamPrefixAgainKeepsItsFrom: where a subscription's
// existing streams started is set when it is made: registering the prefix
// again with another --from is refused naming --from, changing nothing;
// without --from, or with the same, it is an update.
func TestRegisterStreamPrefixAgainKeepsItsFrom(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "tenant/42/orders", "--id", "o1", "--kind", "k")
	args := func(extra ...string) []string {
		return append([]string{"register", "--stream-prefix", "tenant/42/", "--id", "t42", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", goodSecret}, extra...)
	}
	heraldOK(t, db, "", args("--from", "head")...)
	before := heraldOK(t, db, "", "subscriptions", "--streams", "--json")

	r := runCLI(t, db, "", args("--from", "start", "--window", "2")...)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --from: is start, but --stream-prefix=tenant/42/ id=t42 exists, its streams started from head")
	require.Equal(t, before, heraldOK(t, db, "", "subscriptions", "--streams", "--json"), "nothing changed")

	for _, again := range [][]string{{"--window", "2"}, {"--from", "head", "--window", "3"}} {
		require.Contains(t, heraldOK(t, db, "", args(again...)...), "existing streams from past their head", again)
	}
}

// TestUnregisterOfASubscriptionsRegistrationSaysTheSubscriptionStopsFollowing:
// unregistering one stream's registration that a subscription made says the
// subscription no longer follows the stream and how to have it made anew,
// not only a register of the stream alone, which the subscription would
// skip from then on; registering the prefix again follows it again.
func TestUnregisterOfASubscriptionsRegistrationSaysTheSubscriptionStopsFollowing(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "tenant/42/orders", "--id", "o1", "--kind", "k")
	sub := []string{"register", "--stream-prefix", "tenant/42/", "--id", "t42", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret}
	heraldOK(t, db, "", sub...)
	out := heraldOK(t, db, "", "unregister", "--stream", "tenant/42/orders", "--id", "t42")
	require.Contains(t, out, "It was made by the subscription stream_prefix=tenant/42/ id=t42, which no longer follows this stream: register the prefix again")
	require.Regexp(t, `apart from the subscription: herald register .*--stream tenant/42/orders --id t42 `, out)
	require.NotContains(t, out, "To bring it back there")
	require.Contains(t, heraldOK(t, db, "", sub...), "following 1 stream")
}

// TestRegisterStreamPrefixNamesTheStreamsItSkipped: a registration of the
// subscription's id made alone before it keeps its stream from the
// subscription; register --stream-prefix says which (text and --json), and
// nothing when none is.
func TestRegisterStreamPrefixNamesTheStreamsItSkipped(t *testing.T) {
	db := newDB(t)
	for _, stream := range []string{"tenant/42/orders", "tenant/42/invoices"} {
		heraldOK(t, db, "", "register", "--stream", stream, "--id", "audit", "--namespace", "webhook", "--url", "https://tenant.example/x", "--secret", goodSecret)
	}
	heraldOK(t, db, "{}", "append", "--stream", "tenant/7/a", "--id", "a1", "--kind", "k")
	args := []string{"register", "--stream-prefix", "tenant/", "--id", "audit", "--namespace", "webhook", "--url", "https://audit.example/x", "--secret", goodSecret}

	out := heraldOK(t, db, "", args...)
	require.Contains(t, out, "following 1 stream")
	require.Contains(t, out, "It skipped 2 streams under tenant/: each already has a registration audit that it did not make")
	require.Contains(t, out, "\n  tenant/42/invoices\n  tenant/42/orders\n")

	var v struct {
		Skipped        []string
		SkippedStreams int `json:"skipped_streams"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", append([]string{"--json"}, args...)...)), &v))
	require.Equal(t, []string{"tenant/42/invoices", "tenant/42/orders"}, v.Skipped)
	require.Equal(t, 2, v.SkippedStreams)

	// subscriptions --streams lists them the same way, under the streams it follows.
	out = heraldOK(t, db, "", "subscriptions", "--streams")
	require.Contains(t, out, "stream_prefix=tenant/ id=audit:\nSTREAM")
	require.Contains(t, out, "It skipped 2 streams under tenant/: each already has a registration audit that it did not make")
	require.Contains(t, out, "\n  tenant/42/invoices\n  tenant/42/orders\n")
	var list []struct {
		Skipped        []string
		SkippedStreams int `json:"skipped_streams"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "subscriptions", "--streams", "--json")), &list))
	require.Len(t, list, 1)
	require.Equal(t, []string{"tenant/42/invoices", "tenant/42/orders"}, list[0].Skipped)
	require.Equal(t, 2, list[0].SkippedStreams)

	out = heraldOK(t, db, "", "register", "--stream-prefix", "tenant/7/", "--id", "t7", "--namespace", "webhook", "--url", "https://audit.example/x", "--secret", goodSecret)
	require.NotContains(t, out, "skipped")
}

// TestRegisterActivityPubPinsASchemeOrNamesTheBadOne: --signature-scheme
// pins rfc9421 or cavage; another value, or cavage with an Ed25519 key, is
// a usage error naming the flag, and nothing is registered.
func TestRegisterActivityPubPinsASchemeOrNamesTheBadOne(t *testing.T) {
	db := newDB(t)
	key := filepath.Join("..", "..", "testdata", "activitypub", "alice-test-key.pem")
	edKey := filepath.Join("..", "..", "projection", "activitypub", "testdata", "rfc9421", "test-key-ed25519.pem")
	register := func(id, keyFile, scheme string) cliRun {
		return runCLI(t, db, "", "--json", "register", "--stream", "actor/alice", "--id", id, "--namespace", "activitypub",
			"--url", "https://remote.example/"+id, "--key-id", "https://example.com/users/alice#main-key",
			"--private-key-file", keyFile, "--signature-scheme", scheme)
	}
	for _, scheme := range []string{"rfc9421", "cavage"} {
		r := register(scheme, key, scheme)
		require.Equal(t, ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, `"signature_scheme": "`+scheme+`"`)
	}
	for _, bad := range []struct{ keyFile, scheme, says string }{
		{key, "hs2019", "it must be"},
		{edKey, "cavage", "RSA keys only"},
	} {
		r := register("bad", bad.keyFile, bad.scheme)
		require.Equal(t, ExitUsage, r.code, r.stdout)
		require.Contains(t, r.stderr, "--signature-scheme")
		require.Contains(t, r.stderr, bad.says)
	}
	var listed []struct {
		ID              string `json:"id"`
		SignatureScheme string `json:"signature_scheme"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "--json", "registrations")), &listed))
	require.Len(t, listed, 2, "nothing was registered for the bad ones")
	for _, r := range listed {
		require.Equal(t, r.ID, r.SignatureScheme, "the listing shows each registration's pinned scheme, read from its stored config")
	}
}

// register's retry flags are validated, each error naming its flag, stored
// and shown (JSON and the status line); none leaves the namespace's.
func TestRegisterRetryPolicy(t *testing.T) {
	db := newDB(t)
	args := func(more ...string) []string {
		return append([]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, more...)
	}
	for _, c := range []struct{ flags []string }{
		{[]string{"--retry-schedule", "5s,soon"}},
		{[]string{"--retry-schedule", "500ms"}},
		{[]string{"--retry-for", "3 days"}},
		{[]string{"--retry-for", "30s"}},
		{[]string{"--max-attempts", "0"}},
	} {
		r := runCLI(t, db, "", args(c.flags...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", c.flags, r.stderr)
		require.Contains(t, r.stderr, c.flags[0], "the error names the flag")
		requireNoDB(t, db, "a refused register opened nothing")
	}
	heraldOK(t, db, "", args("--retry-schedule", "5s,5m,30m,2h,5h,10h,10h", "--retry-for", "3d", "--max-attempts", "40")...)
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, map[string]any{"schedule": []any{"5s", "5m", "30m", "2h", "5h", "10h", "10h"}, "max_attempts": 40.0, "for": "3d"}, regs[0]["retry"])
	heraldOK(t, db, "", args()...)
	regs = nil
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.NotContains(t, regs[0], "retry", "re-registering without the flags: the namespace's again")
}

// A value too long to show whole, refused by a rule that another names
// again (a --retry-schedule delay, a key id, an --allow-host pattern), is
// cut once, its own length said, and the refusal still says what it must
// be (it was cut twice: the length said was the inner message's, and the
// reason was lost).
func TestLongValueCutOnce(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	key := filepath.Join(t.TempDir(), "k.pem")
	_, pem := keytest.Ed25519(t)
	require.NoError(t, os.WriteFile(key, pem, 0o600))
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret, "--retry-schedule", "5s," + long},
			"invalid --retry-schedule: delay 2: "},
		{[]string{"sweep", "--namespace", "webhook", "--retry-schedule", long}, "invalid --retry-schedule: delay 1: "},
		{[]string{"keys", "add", "--private-key", key, "--key-id", long}, "invalid --key-id: "},
		{[]string{"sweep", "--namespace", "webhook", "--allow-host", long}, "invalid --allow-host (the 1st): "},
	} {
		r := runCLI(t, db, "", c.args...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Less(t, len(r.stderr), 600, r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "…"), "cut once: %s", r.stderr)
		require.Contains(t, r.stderr, c.want)
		require.Contains(t, r.stderr, "(100000 bytes)", "the value's own length")
		require.NotRegexp(t, `bytes\)"?\n$`, r.stderr, "the reason follows the value")
	}
}

// A refusal's reason that names another field names it as the CLI user
// typed it, by its flag (it said private_key, auth_scheme, proof_key_id);
// a quoted value is left as given.
func TestRefusalsNameFlagsNotFields(t *testing.T) {
	db := newDB(t)
	key := filepath.Join(t.TempDir(), "k.pem")
	_, pem := keytest.Ed25519(t)
	require.NoError(t, os.WriteFile(key, pem, 0o600))
	ap := []string{"register", "--stream", "s", "--id", "i", "--namespace", "activitypub", "--url", "https://example.com/inbox"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(ap, "--key-id", "https://example.com/a#k", "--private-key-file", key, "--signature-scheme", "cavage"),
			"invalid --signature-scheme: is \"cavage\", which fediverse servers verify with RSA keys only, and --private-key-file is Ed25519"},
		{append(ap, "--key-id", "https://example.com/a#k"), "names no stored key: add it with `herald keys add`, or give --private-key-file\n"},
		{append(ap, "--key-id", "https://example.com/a#k", "--private-key-file", key, "--proof-private-key-file", key),
			"invalid --proof-private-key-file: needs --proof-key-id, the id of the Multikey it is"},
		{[]string{"register", "--stream", "s", "--id", "i", "--namespace", "a2a", "--url", "https://example.com/a2a", "--auth-scheme", "Bearer"},
			"invalid --credentials: is missing: --auth-scheme \"Bearer\" alone sends no Authorization header"},
		{[]string{"register", "--stream", "s", "--id", "i", "--namespace", "a2a", "--url", "https://example.com/a2a", "--a2a-version", "auth_scheme"},
			"invalid --a2a-version: \"auth_scheme\" must be"},
	} {
		r := runCLI(t, db, "", c.args...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
	// rotate-secret sets no secret by a flag: the registration's secrets
	// are named without the HTTP API's "config.".
	secrets := []string{"register", "--stream", "s", "--id", "w", "--namespace", "webhook", "--url", "https://hooks.example/x"}
	for i := range webhook.MaxSecrets {
		secrets = append(secrets, "--secret", fmt.Sprintf("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa%02d", i))
	}
	heraldOK(t, db, "", secrets...)
	r := runCLI(t, db, "", "rotate-secret", "--stream", "s", "--id", "w")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "herald: invalid secrets: would hold 9 secrets with the retiring ones, more than 8: rotate again after ")
	require.Contains(t, r.stderr, ", or with --expire-old 0")
}

// register --rate is validated, its error naming the flag and the forms it
// takes; refused with --stream-prefix; stored and shown (the status line,
// the registrations table, JSON); re-registering without it removes it.
func TestRegisterRate(t *testing.T) {
	db := newDB(t)
	args := func(more ...string) []string {
		return append([]string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, more...)
	}
	for _, bad := range []string{"10", "10/sec", "0/s", "10001/h", "-1/min", "10/ s", "1e3/s", "ten/s", ""} {
		r := runCLI(t, db, "", args("--rate", bad)...)
		require.Equal(t, ExitUsage, r.code, "--rate %q: %s", bad, r.stderr)
		require.Contains(t, r.stderr, fmt.Sprintf("--rate %q must be N/s, N/min or N/h with N from 1 to 10000", bad))
		requireNoDB(t, db, "a refused register opened nothing")
	}
	r := runCLI(t, db, "", "register", "--stream-prefix", "tenant/42/", "--id", "t", "--namespace", "webhook", "--url", "https://hooks.example/t",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--rate", "10/s")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--rate applies to --stream only")

	require.Contains(t, heraldOK(t, db, "", args("--rate", "600/min")...), ", rate 600/min,")
	require.Regexp(t, `(?m)^s\s+r\s+webhook\s+hooks.example:443\s+all\s+1\s+600/min\s`, heraldOK(t, db, "", "registrations"))
	var regs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, "600/min", regs[0]["rate"])
	heraldOK(t, db, "", args()...)
	regs = nil
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.NotContains(t, regs[0], "rate", "re-registering without --rate: no limit")
	require.Regexp(t, `(?m)^s\s+r\s+webhook\s+hooks.example:443\s+all\s+1\s+none\s`, heraldOK(t, db, "", "registrations"))
	help := heraldOK(t, db, "", "register", "--help")
	require.Contains(t, help, "--rate string")
	require.Contains(t, help, "N/s, N/min or N/h")
}

// A --stream-prefix of 200 bytes leaves no room for a stream under it: it is
// refused naming --stream-prefix (it named --stream, which was not given),
// with --json too, and nothing is subscribed.
func TestRegisterNamesAStreamPrefixWithNoRoomForAStream(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "o1", "--kind", "k")
	prefix := strings.Repeat("a", 199) + "/"
	r := runCLI(t, db, "", "--json", "register", "--stream-prefix", prefix, "--id", "x", "--namespace", "webhook", "--url", "https://hooks.example/x")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &e), r.stderr)
	require.True(t, strings.HasPrefix(e.Error, "invalid --stream-prefix: is 200 bytes"), e.Error)
	require.Equal(t, "No subscriptions.\n", heraldOK(t, db, "", "subscriptions"))
}

// A file flag (a PEM, a file: secret) reads at most what a config holds,
// 1 MiB, and refuses a longer file naming the flag and the bound, having
// read no more: given a device or a log by mistake (/dev/zero filled 24 GB
// until the kernel killed herald), it changes nothing and says why.
func TestAFileFlagReadsAtMostWhatAConfigHolds(t *testing.T) {
	db := newDB(t)
	big := filepath.Join(t.TempDir(), "big.pem")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("A"), store.MaxConfigBytes+1), 0o600))
	keyFile, _ := rsaKeyFile(t, "alice.pem")
	reg := []string{"register", "--stream", "s", "--id", "r", "--url", "https://r.example/"}
	for flag, args := range map[string][]string{
		"--secret":           append(reg, "--namespace", "webhook", "--secret", "file:"+big),
		"--client-cert":      append(reg, "--namespace", "webhook", "--client-cert", big, "--client-key", keyFile),
		"--client-key":       append(reg, "--namespace", "webhook", "--client-cert", keyFile, "--client-key", big),
		"--private-key-file": append(reg, "--namespace", "activitypub", "--key-id", "https://a.example/u/alice#main-key", "--private-key-file", big),
		"--private-key":      {"keys", "add", "--key-id", "https://a.example/u/alice#main-key", "--private-key", big},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%s: %s", flag, r.stderr)
		require.Contains(t, r.stderr, flag, flag)
		require.Contains(t, r.stderr, fmt.Sprintf("is longer than %d bytes", store.MaxConfigBytes), flag)
		requireNoDB(t, db, flag)
	}
}

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
)

// Counts are English: "1 record", not "1 records".
func TestUnparkSaysOneRecord(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://192.0.2.10/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "later", "--namespace", "webhook", "--url", "https://192.0.2.10/y",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z")
	require.Equal(t, ExitAttention, r.code, r.stderr)
	require.Equal(t, "Unparked stream=s id=r: due now at cursor 1 (1 record to deliver).\n",
		heraldOK(t, db, "", "unpark", "--stream", "s", "--id", "r", "--at", "2026-03-15T11:01:00Z"))
	// An --at ahead of the clock is when it is due.
	require.Equal(t, "Unparked stream=s id=later: due from 2099-01-01 00:00:00Z at cursor 1 (1 record to deliver).\n",
		heraldOK(t, db, "", "unpark", "--stream", "s", "--id", "later", "--at", "2099-01-01T00:00:00Z"))
}

// unpark --all resumes every parked registration the filters match, each with
// its evidence.
func TestUnparkAll(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "{}", "append", "--stream", "t", "--id", "e2", "--kind", "k")
	// 192.0.2.0/24 is refused by the network guard: the sweep parks them.
	for _, r := range []struct{ stream, id string }{{"s", "a"}, {"s", "b"}, {"t", "c"}} {
		heraldOK(t, db, "", "register", "--stream", r.stream, "--id", r.id, "--namespace", "webhook", "--url", "https://192.0.2.10/"+r.id, "--secret", goodSecret)
	}
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "ce", "--namespace", "cloudevents", "--url", "https://192.0.2.10/ce", "--source", "/x")
	for _, ns := range []string{"webhook", "cloudevents"} {
		r := runCLI(t, db, "", "sweep", "--namespace", ns, "--at", "2026-03-15T11:00:00Z")
		require.Equal(t, ExitAttention, r.code, r.stderr)
	}
	parkedNow := func() []string {
		var regs []operator.RegistrationView
		require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--parked", "--json")), &regs))
		var ids []string
		for _, r := range regs {
			ids = append(ids, r.Stream+" "+r.ID)
		}
		return ids
	}
	require.Equal(t, []string{"s a", "s b", "s ce", "t c"}, parkedNow(), "all four parked")

	out := heraldOK(t, db, "", "unpark", "--all", "--stream", "s", "--namespace", "webhook", "--at", "2026-03-15T11:05:00Z")
	require.Contains(t, out, "Unparked stream=s id=a: due now at cursor 1 (1 record to deliver).\n")
	require.Contains(t, out, "Unparked stream=s id=b: due now at cursor 1 (1 record to deliver).\n")
	require.Contains(t, out, "2 registrations unparked, due now.\n")
	require.Equal(t, []string{"s ce", "t c"}, parkedNow(), "only webhook's of stream s were unparked")
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "a"), "unparked")

	var all struct {
		Unparked []operator.RegistrationView `json:"unparked"`
	}
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "unpark", "--all", "--json")), &all))
	require.Len(t, all.Unparked, 2, "c and ce, the rest")
	require.Equal(t, "No parked registration matched; nothing changed.\n", heraldOK(t, db, "", "unpark", "--all"))

	for args, says := range map[string]string{
		"--all --id a":                          "unpark takes --id or --all, not both",
		"--stream s --id a --namespace webhook": "--namespace applies to unpark --all",
		"--all --namespace nope":                "nope",
	} {
		r := runCLI(t, db, "", append([]string{"unpark"}, strings.Fields(args)...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, says, args)
	}
}

// unpark --all refuses an empty --stream or --namespace (an unset variable in
// a script), which would otherwise unpark every stream's, and unpark without
// --id says that --all exists.
func TestUnparkAllRefusesAnEmptyFilter(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, `{}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	for _, args := range [][]string{
		{"unpark", "--all", "--stream", ""},
		{"unpark", "--all", "--namespace", ""},
	} {
		r := runCLI(t, db, "", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "is empty; leave it out to unpark every", args)
	}
	r := runCLI(t, db, "", "unpark", "--stream", "s")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "unpark needs --id, or --all")
}

// rewind moves a cursor back, never forward; skip's --reason is refused
// when the evidence would cut it or hide a control character; an update of
// a registration says so; the command printed to bring a registration back
// is safe to paste whatever its stream and id hold.
func TestOperatorMovesSayWhatTheyDo(t *testing.T) {
	db := newDB(t)
	for i := range 5 {
		heraldOK(t, db, "{}", "append", "--stream", "a&id=b", "--id", fmt.Sprint("e", i), "--kind", "k")
	}
	out := heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret)
	require.Contains(t, out, "Registered stream=a&id=b id=x#y")
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x")
	require.Contains(t, out, "Updated stream=a&id=b id=x#y: cloudevents to other.example:443")
	require.Contains(t, out, "It replaced webhook to https://hooks.example/x;")
	// An update keeps the cursor: --from-seq says it did nothing.
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x", "--from-seq", "4")
	require.Contains(t, out, "cursor 1, 5 records to deliver")
	require.Contains(t, out, "--from-seq 4 applies to a new registration only: the cursor stays at 1")
	out = heraldOK(t, db, "", "register", "--stream", "a&id=b", "--id", "x#y", "--namespace", "cloudevents", "--url", "https://other.example/ce", "--source", "/x", "--from-seq", "4", "--json")
	require.Contains(t, out, `"--from-seq 4 applies to a new registration only: the cursor stays at 1 (herald skip or rewind moves it)"`)

	r := runCLI(t, db, "", "rewind", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "3")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "a rewind moves the cursor back")
	require.Contains(t, r.stderr, "skip")

	heraldOK(t, db, "", "skip", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "4", "--reason", "bad records")
	heraldOK(t, db, "", "rewind", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "2")
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "a&id=b", "--id", "x#y"), "rewound from #4 to #2")

	for reason, says := range map[string]string{
		strings.Repeat("r", 2049): "invalid --reason: is longer than 2048 bytes (2049)",
		"bad\x1b[31mred":          "invalid --reason: has a control character U+001B at byte 3",
		"":                        "invalid --reason: is empty",
	} {
		r := runCLI(t, db, "", "skip", "--stream", "a&id=b", "--id", "x#y", "--to-seq", "3", "--reason", reason)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, says)
	}

	out = heraldOK(t, db, "", "unregister", "--stream", "a&id=b", "--id", "x#y")
	require.Contains(t, out, "herald register --database "+shellQuote("sqlite:"+db)+" --stream 'a&id=b' --id 'x#y' --namespace cloudevents --url https://other.example/ce --on-4xx retry --from-seq 2, with its --source, --structured, --token as registered\n")
}

// unregister removes a registration, says where its cursor was, and leaves
// the journal alone.
func TestUnregister(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x",
		"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	out := heraldOK(t, db, "", "unregister", "--stream", "s", "--id", "r")
	require.Contains(t, out, "Unregistered stream=s id=r (webhook to hooks.example:443) at cursor 1, with 1 record not delivered")
	require.Contains(t, out, "--from-seq 1")
	require.Equal(t, "No registrations.\n", heraldOK(t, db, "", "registrations"))
	require.Contains(t, heraldOK(t, db, "", "records", "--stream", "s"), "e1", "the journal keeps the record")

	r := runCLI(t, db, "", "unregister", "--stream", "s", "--id", "r")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "not found")
	r = runCLI(t, db, "", "unregister", "--stream", "s")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "needs --id")
}

// The evidence's Retry-After note says what herald waits, and what the
// receiver asked when that differs; other errors are kept whole.
func TestRetryAfterNote(t *testing.T) {
	at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		err   string
		waits time.Duration
		want  string
	}{
		{"503 Service Unavailable; Retry-After 720h0m0s", time.Hour, "503 Service Unavailable; retry after 1h (capped; the receiver asked 30d)"},
		{"429 Too Many Requests; Retry-After 2m0s", 2 * time.Minute, "429 Too Many Requests; retry after 2m (as the receiver asked)"},
		{"503 Service Unavailable; Retry-After 0s", time.Second, "503 Service Unavailable; retry after 1s (at least 1s; the receiver asked 0s)"},
		{"500 Internal Server Error", time.Minute, "500 Internal Server Error"},
		{"body says ; Retry-After soon", time.Minute, "body says ; Retry-After soon"},
	} {
		ev := store.Evidence{At: at, NotBefore: at.Add(c.waits), Error: c.err}
		require.Equal(t, c.want, retryAfterNote(ev), c.err)
	}
	require.Equal(t, "x; Retry-After 1h0m0s", retryAfterNote(store.Evidence{At: at, Error: "x; Retry-After 1h0m0s"}), "no next attempt: kept")
}

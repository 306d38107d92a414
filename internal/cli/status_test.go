package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

func TestHostsCommand(t *testing.T) {
	db := downHostDB(t)

	code, out, errOut := runHostsCLI(t, db, "hosts")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "down.example:443")
	require.Contains(t, out, "down")
	require.NotContains(t, out, "\x1b", "a receiver's escape sequence never reaches the terminal")
	require.Contains(t, out, "owned second line", "the last error is shown, on one line")
	require.Equal(t, 2, strings.Count(out, "\n"), "a header and one row: the line break was flattened")

	code, out, _ = runHostsCLI(t, db, "hosts", "--json")
	require.Equal(t, ExitOK, code)
	var hosts []store.Host
	require.NoError(t, json.Unmarshal([]byte(out), &hosts))
	require.Len(t, hosts, 1)
	h := hosts[0]
	require.Equal(t, "down.example:443", h.Host)
	require.Equal(t, store.HostDown, h.State)
	require.Equal(t, 3, h.Failures)
	require.Equal(t, 2, h.Held, "a and b are held")
	require.True(t, h.Since.Equal(t0.Add(2*time.Minute)))
	require.True(t, h.NextProbeAt.Equal(h.Since.Add(store.ProbeDelay(h.Host, 0))))
	require.Equal(t, hostile, h.LastError, "JSON keeps the text, escaped by the encoding")

	code, out, _ = runHostsCLI(t, db, "registrations", "--json")
	require.Equal(t, ExitOK, code)
	var regs []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(out), &regs))
	require.Len(t, regs, 3)
	for _, v := range regs {
		if v.Host == "down.example:443" {
			require.Equal(t, "held", v.State, v.ID)
			require.Equal(t, store.HostDown, v.HeldFor, v.ID)
		} else {
			require.NotEqual(t, "held", v.State, "%s is on a host that is up", v.ID)
		}
	}
	code, out, _ = runHostsCLI(t, db, "registrations")
	require.Equal(t, ExitOK, code)
	require.Equal(t, 2, strings.Count(out, "held: host down"), "the table says why they are held")

	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "Hosts: 1 down, 0 unavailable, 2 registrations held for them")
	require.NotContains(t, out, "\x1b")
	code, out, _ = runHostsCLI(t, db, "status", "--json")
	require.Equal(t, ExitOK, code)
	var st struct {
		Namespaces map[string]operator.NamespaceView `json:"namespaces"`
		Hosts      operator.HostSummary              `json:"hosts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, 1, st.Hosts.Down)
	require.Equal(t, 2, st.Hosts.Held)
	require.Len(t, st.Hosts.NotUp, 1)
	// a and b are counted held, not ready; c is ready.
	wh := st.Namespaces["webhook"]
	require.Equal(t, 2, wh.Held, "%+v", wh)
	require.Equal(t, 1, wh.Ready+wh.Retrying, "%+v", wh)
	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.Regexp(t, `(?m)^NAMESPACE +READY +RETRYING +HELD .*\n^webhook +1 +0 +2 `, out)

	code, _, errOut = runHostsCLI(t, db, "hosts", "--state", "sideways")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--state")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "HOST")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "unknown.example:443")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "herald hosts --database sqlite:"+db+" lists")

	code, out, errOut = runHostsCLI(t, db, "hosts", "reset", "https://DOWN.example/inbox", "--at", "2026-03-15T12:00:00Z", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var reset struct {
		Released int        `json:"released"`
		Host     store.Host `json:"host"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &reset))
	require.Equal(t, 2, reset.Released)
	require.Equal(t, store.HostUp, reset.Host.State)
	require.True(t, reset.Host.Since.Equal(time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)))
	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.NotContains(t, out, "Hosts:", "no host is down any more")
	require.Regexp(t, `(?m)^webhook +3 +0 +0 `, out, "released: all three ready")
	code, out, _ = runHostsCLI(t, db, "registrations")
	require.Equal(t, ExitOK, code)
	require.NotContains(t, out, "held", "released")

	// Again: it is up with no failures; nothing to reset, and it says so.
	code, out, errOut = runHostsCLI(t, db, "hosts", "reset", "down.example:443")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "down.example:443 was up with no failures; nothing changed.\n", out)
	// A host named without its port is named with it in the hint.
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "down.example")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "a host is host:port, as herald hosts lists it (down.example:443 for https)")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "a:1", "b:2")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "takes one HOST (host:port, as herald hosts lists it), not 2")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "HOST is empty")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "::1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "([::1]:443 for https)")
	// A URL that does not parse is said to be one, not looked up as a host.
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "http://exa mple")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "invalid host: is neither host:port")
	require.Contains(t, errOut, "cannot be parsed")
	require.NotContains(t, errOut, "not found")
}

// With no host to show, herald hosts says why, in words that fit the filter.
func TestHostsSaysWhyNoneIsListed(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	code, out, errOut := runHostsCLI(t, db, "hosts")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "No host has failed or refused a signature scheme: herald keeps a row only for hosts that have.\n", out)
	code, out, errOut = runHostsCLI(t, db, "hosts", "--state", "down")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "No host is down.\n", out)
}

// An empty list says so, in words that tell no registrations from none
// matching (a mistyped --stream); --json gives an empty array.
func TestRegistrationsSaysWhenNoneMatched(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "migrate", "up")
	require.Equal(t, "No registrations.\n", heraldOK(t, db, "", "registrations"))
	heraldOK(t, db, "", "register", "--stream", "orders", "--id", "r", "--namespace", "webhook", "--url", "https://h.example/", "--secret", goodSecret)
	require.Equal(t, "No registration matched.\n", heraldOK(t, db, "", "registrations", "--stream", "ordrs"))
	require.Equal(t, "No registration matched.\n", heraldOK(t, db, "", "registrations", "--parked"))
	require.JSONEq(t, `[]`, heraldOK(t, db, "", "registrations", "--stream", "ordrs", "--json"))
	require.Contains(t, heraldOK(t, db, "", "registrations"), "orders")
}

// A parked registration is not attempted until unparked: herald status
// and herald registrations show "parked" as its next attempt, never the
// instant stored with it, while a retrying one shows its instant.
func TestParkedRowsShowNoNextAttempt(t *testing.T) {
	db := newDB(t)
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	_, err = s.Append(t.Context(), "orders", journal.Entry{ID: "o-1", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	for _, id := range []string{"gone", "busy"} {
		_, err = s.Register(t.Context(), push.Registration{Stream: "orders", ID: id, Namespace: "webhook", URL: "https://" + id + ".example/"})
		require.NoError(t, err)
		b, err := s.Due(t.Context(), store.DueQuery{At: t0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		require.Len(t, b.Registrations, 1)
		c := b.Registrations[0].Claim()
		if id == "gone" {
			require.NoError(t, s.Park(t.Context(), c, 1, store.Evidence{At: t0, Event: store.EventParked, Status: 410, Error: "410 Gone"}))
		} else {
			require.NoError(t, s.Retry(t.Context(), c, 1, t0.Add(time.Hour), store.Evidence{At: t0, Event: store.EventFailed, Status: 503, NotBefore: t0.Add(time.Hour)}))
		}
	}
	require.NoError(t, s.Close())

	rowOf := func(out, id string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, " "+id+" ") {
				return line
			}
		}
		t.Fatalf("no row for %s in\n%s", id, out)
		return ""
	}
	for _, args := range [][]string{{"registrations"}, {"status"}} {
		out := heraldOK(t, db, "", args...)
		require.Contains(t, out, "NEXT ATTEMPT", args)
		gone := rowOf(out, "gone")
		require.Regexp(t, `\sparked\s+parked\s`, gone, "%v: NEXT ATTEMPT and STATE of the parked row", args)
		require.NotContains(t, gone, "2026-", "%v: no instant for a parked row: %s", args, gone)
		require.Contains(t, rowOf(out, "busy"), "2026-03-15 12:00:00Z", "%v: a retrying row shows when", args)
	}
}

// registrations --limit says when more follow, with the command that lists
// them.
func TestRegistrationsSaysWhenMoreFollow(t *testing.T) {
	db := newDB(t)
	for i, id := range []string{"r1", "r2", "r 3"} { // listed by id: "r 3", r1, r2
		heraldOK(t, db, "", "register", "--stream", "s/1", "--id", id, "--namespace", "webhook", "--url", fmt.Sprint("https://hooks.example/", i), "--secret", goodSecret)
	}
	out := heraldOK(t, db, "", "registrations", "--stream", "s/1", "--limit", "2")
	again := "herald registrations --database " + shellQuote("sqlite:"+db)
	require.Contains(t, out, "More registrations follow: "+again+" --stream s/1 --limit 2 --after-stream s/1 --after-id r1\n")
	require.Contains(t, out, "r 3")
	require.NotContains(t, out, "r2")
	out = heraldOK(t, db, "", "registrations", "--stream", "s/1", "--limit", "2", "--after-stream", "s/1", "--after-id", "r1")
	require.Contains(t, out, "r2")
	require.NotContains(t, out, "r1", "the page begins after --after-id")
	require.NotContains(t, out, "r 3")
	require.NotContains(t, out, "More registrations follow", "the last page says nothing more")
	// The printed command carries the filters and quotes what needs it.
	heraldOK(t, db, "{}", "append", "--stream", "s/1", "--id", "e1", "--kind", "k")
	out = heraldOK(t, db, "", "registrations", "--stream", "s/1", "--lagging", "--limit", "1")
	require.Contains(t, out, "More registrations follow: "+again+" --stream s/1 --lagging --limit 1 --after-stream s/1 --after-id 'r 3'\n")
	require.NotContains(t, heraldOK(t, db, "", "registrations", "--limit", "3"), "More registrations follow", "exactly --limit, none after")
	r := runCLI(t, db, "", "registrations", "--after-stream", "s/1")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --after-id: is missing: a list after a registration takes its stream and its id")
	// A --stream no stream can have is refused, as records refuses it, not
	// answered with an empty list.
	r = runCLI(t, db, "", "registrations", "--stream", "\x1b[31m")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid --stream: has a control character U+001B at byte 0")
	require.NotContains(t, r.stderr, "\x1b")
}

// record-status tells a cursor moved past a record from one the receiver
// acknowledged.
func TestRecordStatusTellsSkippedFromAcknowledged(t *testing.T) {
	ok := answering(t, http.StatusNoContent)
	refuses := answering(t, http.StatusUnprocessableEntity)
	db := newDB(t)
	for i := range 3 {
		heraldOK(t, db, "{}", "append", "--stream", "s", "--id", fmt.Sprint("e", i), "--kind", "order.created")
	}
	reg := func(id, url string, more ...string) {
		heraldOK(t, db, "", append([]string{"register", "--stream", "s", "--id", id, "--namespace", "webhook", "--url", url, "--secret", goodSecret}, more...)...)
	}
	reg("acker", ok.URL+"/a")
	reg("pattern", ok.URL+"/p", "--kinds", "order.*")
	reg("picky", ok.URL+"/k", "--kinds", "order.paid")
	reg("rejected", refuses.URL+"/r", "--on-4xx", "skip")
	reg("skipper", "https://192.0.2.10/s")
	heraldOK(t, db, "", "skip", "--stream", "s", "--id", "skipper", "--to-seq", "3", "--reason", "poison")
	r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z", "--allow-http", "--allow-private-network")
	require.Contains(t, []int{ExitOK, ExitAttention}, r.code, r.stderr)

	out := heraldOK(t, db, "", "record-status", "--stream", "s", "--seq", "2")
	for id, said := range map[string]string{"acker": "yes", "pattern": "yes", "picky": "not its kind", "rejected": "skipped", "skipper": "yes or skipped"} {
		require.Regexp(t, `(?m)^`+id+` +webhook +\S+ +`+said+` +[0-9]+ `, out, id)
	}
	require.Contains(t, out, "Past the cursor of 5 (acknowledged by 2, moved past by the others), not yet of 0.")
	require.Contains(t, out, `"yes": acknowledged (a 2xx)`)
}

// A stream name with a bidirectional override reaches the terminal with the
// override shown as its code point, in append's answer and in the tables,
// never raw.
func TestAHiddenCharacterOfAStreamIsShownAsItsCodePoint(t *testing.T) {
	db := newDB(t)
	const stream = "p\u202Eq"
	out := heraldOK(t, db, `{}`, "append", "--stream", stream, "--id", "c1", "--kind", "k")
	require.Equal(t, "Appended p‹U+202E›q#1 (id c1).\n", out)
	out = heraldOK(t, db, `{}`, "append", "--stream", stream, "--id", "c1", "--kind", "k")
	require.Contains(t, out, "Already in the journal: p‹U+202E›q#1")
	heraldOK(t, db, "", "register", "--stream", stream, "--id", "r\u2066", "--namespace", "webhook",
		"--url", "https://hooks.example/x", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	for _, args := range [][]string{{"registrations"}, {"status"}, {"streams"}} {
		out := heraldOK(t, db, "", args...)
		require.NotContains(t, out, "\u202E", args)
		require.NotContains(t, out, "\u2066", args)
		require.Contains(t, out, "p‹U+202E›q", args)
	}
	require.Contains(t, heraldOK(t, db, "", "registrations"), "r‹U+2066›")
}

// records reads the journal, payloads shown safely.
func TestRecords(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	heraldOK(t, db, "{\"note\": \"line\\nbreak \\u001b[31m\"}", "append", "--stream", "s", "--id", "e1", "--kind", "order.created")
	heraldOK(t, db, "\x89PNG\r\n\x1a\n\x00\x00", "append", "--stream", "s", "--id", "e2", "--kind", "blob", "--content-type", "image/png")
	heraldOK(t, db, "raw\x1b[2Jtext", "append", "--stream", "s", "--id", "e3", "--kind", "note", "--content-type", "text/plain")

	out := heraldOK(t, db, "", "records", "--stream", "s")
	require.Contains(t, out, "SEQ")
	require.Contains(t, out, `{"note":"line\nbreak \u001b[31m"}`, "JSON is compacted; its escapes stay escapes")
	require.Contains(t, out, "(10 bytes, not UTF-8 text: see --json)")
	require.Contains(t, out, "raw‹U+001B›[2Jtext", "a control character never reaches the terminal: it is shown as its code point")
	require.NotContains(t, out, "\x1b")

	out = heraldOK(t, db, "", "records", "--stream", "s", "--from-seq", "2", "--limit", "1")
	require.Contains(t, out, "e2")
	require.NotContains(t, out, "e1")
	require.NotContains(t, out, "e3")

	var page struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "records", "--stream", "s", "--json")), &page))
	recs := page.Records
	require.Len(t, recs, 3)
	require.Equal(t, map[string]any{"note": "line\nbreak \x1b[31m"}, recs[0]["payload"])
	require.Equal(t, "iVBORw0KGgoAAA==", recs[1]["payload_base64"])
	require.Equal(t, float64(3), recs[2]["seq"])

	for _, c := range []struct{ args, want string }{
		{"--from-seq 0", "--from-seq 0 must be 1 or more"},
		{"--limit 1001", "--limit 1001 must be from 1 to 1000"},
	} {
		r := runCLI(t, db, "", append([]string{"records", "--stream", "s"}, strings.Fields(c.args)...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
	require.Contains(t, heraldOK(t, db, "", "records", "--stream", "other"), "Stream other has no records from #1 (head 0).")
}

// --json shows a payload's characters as the producer wrote them: a
// script reading it as text finds "<a&b>", not the HTML-safe escapes a
// browser would need (\u003c, \u0026), which no terminal does.
func TestRecordsJSONShowsAPayloadsCharactersAsWritten(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, `{"q":"<a&b>"}`, "append", "--stream", "s", "--id", "e1", "--kind", "k")
	out := heraldOK(t, db, "", "records", "--stream", "s", "--json")
	require.Contains(t, out, `"q": "<a&b>"`)
	require.NotContains(t, out, `\u0026`)
}

package chaos

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store"
)

// hostile is one command that must be refused: exit code and the words
// (regular expressions) its error must say, and what it must not repeat.
type hostile struct {
	name   string
	stdin  string
	args   []string
	code   int
	says   []string
	secret string // a value that must not appear in the output
}

// TestChaosHostileInput runs hostile input through the command line: each
// case must be refused with a clear error (exit 2 for bad usage or values,
// 1 for a conflict, a sealed stream, a missing or unusable database) naming
// the problem, and change nothing (the registrations as herald lists them,
// every stream's head and every table's row count are the same before and
// after; a SQLite file is the same byte for byte).
//
// Addresses are refused in two stages, and it checks both: registration
// refuses what is not a usable URL at all (userinfo, schemes other than
// http and https, no host, fragments, control characters, length);
// addresses that are valid URLs but point where herald must never connect
// (loopback, RFC 1918, link-local and the cloud metadata service, CGNAT,
// ULA, multicast, reserved, documentation, NAT64, 6to4, IPv4-mapped and
// -compatible IPv6, decimal, octal, hex and short IPv4 forms, names that
// resolve to loopback) are registered and refused by the transport's
// network guard at delivery: the registration is parked at once with the
// guard's evidence, and a loopback trap on the port they name is never
// connected to.
func TestChaosHostileInput(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDatabase(t)
	s := newScenario(t, db)
	c := s.cli
	c.ok("migrate", "up")
	secret := s.webhookSecret()
	secretFile := filepath.Join(s.dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("register", "--stream", "hostile/base", "--id", "r1", "--namespace", "webhook", "--url", "https://hooks.example.com/r1", "--secret", "file:"+secretFile)
	if r := c.run(`{"n":0}`, "append", "--stream", "hostile/base", "--id", "base-1", "--kind", "k"); r.code != 0 {
		t.Fatal(r)
	}
	if r := c.run(`{"n":1}`, "append", "--stream", "hostile/base", "--id", "base-2", "--kind", "k"); r.code != 0 {
		t.Fatal(r)
	}
	if r := c.run(`{"closed":true}`, "append", "--stream", "hostile/sealed", "--id", "sealed-1", "--kind", "k", "--final"); r.code != 0 {
		t.Fatal(r)
	}

	fingerprint := func() string {
		var b strings.Builder
		b.WriteString(c.ok("registrations", "--json", "--limit", "100000"))
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT stream || ' ' || head || ' ' || coalesce(final_seq, 0) FROM herald_stream ORDER BY stream`)
		if err != nil {
			t.Fatal(err)
		}
		heads, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(heads, "\n"))
		for _, table := range []string{"herald_record", "herald_registration", "herald_evidence", "herald_stream"} {
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "\n%s %d", table, n)
		}
		return b.String()
	}

	pw := s.token("pw-")
	notASecret := s.token("plain-secret-")
	ceToken := s.token("ce-")
	long := strings.Repeat("a", 10_000)
	reg := func(over ...string) []string {
		vals := map[string]string{"--stream": "hostile/new", "--id": "r", "--namespace": "webhook", "--url": "https://hooks.example.com/x"}
		var extra []string
		for i := 0; i+1 < len(over); i += 2 {
			if _, known := vals[over[i]]; known {
				vals[over[i]] = over[i+1]
			} else {
				extra = append(extra, over[i], over[i+1])
			}
		}
		out := []string{"register", "--stream", vals["--stream"], "--id", vals["--id"], "--namespace", vals["--namespace"], "--url", vals["--url"]}
		if vals["--namespace"] == "webhook" && !slices.Contains(extra, "--secret") && !slices.Contains(extra, "--token") {
			out = append(out, "--secret", "file:"+secretFile)
		}
		return append(out, extra...)
	}
	file := func(name, content string) string {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var manyLines strings.Builder
	for i := 1; i <= 501; i++ {
		fmt.Fprintf(&manyLines, `{"stream":"hostile/batches","id":"batch-%d","kind":"k","payload":{"i":%d}}`+"\n", i, i)
	}
	bigPayload := `{"x":"` + strings.Repeat("x", 1<<20) + `"}`

	cases := []hostile{
		// Stage 1: URLs registration refuses.
		{name: "url with user and password", args: reg("--url", "https://admin:"+pw+"@hooks.example.com/x"), code: 2, says: []string{"url", "userinfo"}, secret: pw},
		{name: "url with a user", args: reg("--url", "https://admin@hooks.example.com/x"), code: 2, says: []string{"userinfo"}},
		{name: "ftp scheme", args: reg("--url", "ftp://hooks.example.com/x"), code: 2, says: []string{`scheme "ftp"`}},
		{name: "file scheme", args: reg("--url", "file:///etc/passwd"), code: 2, says: []string{`scheme "file"`}},
		{name: "javascript scheme", args: reg("--url", "javascript:alert(1)"), code: 2, says: []string{`scheme "javascript"`}},
		{name: "gopher scheme", args: reg("--url", "gopher://127.0.0.1:6379/_FLUSHALL"), code: 2, says: []string{`scheme "gopher"`}},
		{name: "websocket scheme", args: reg("--url", "ws://hooks.example.com/socket"), code: 2, says: []string{`scheme "ws"`}},
		{name: "data url", args: reg("--url", "data:text/plain,hello"), code: 2, says: []string{`scheme "data"`}},
		{name: "scheme-relative url", args: reg("--url", "//hooks.example.com/x"), code: 2, says: []string{`scheme ""`}},
		{name: "relative url", args: reg("--url", "/inbox"), code: 2, says: []string{`scheme`}},
		{name: "url without a host", args: reg("--url", "https:///x"), code: 2, says: []string{"no host"}},
		{name: "url with a fragment", args: reg("--url", "https://hooks.example.com/x#frag"), code: 2, says: []string{"fragment"}},
		{name: "url with a space", args: reg("--url", "https://hooks.example.com/a b"), code: 2, says: []string{"url", "U\\+0020"}},
		{name: "url with DEL", args: reg("--url", "https://hooks.example.com/a\x7fb"), code: 2, says: []string{"url"}},
		{name: "url with CRLF header injection", args: reg("--url", "https://hooks.example.com/x\r\nX-Injected: 1"), code: 2, says: []string{"url"}},
		{name: "url with U+2028", args: reg("--url", "https://hooks.example.com/\u2028"), code: 2, says: []string{"url", "U\\+2028"}},
		{name: "url of 3000 bytes", args: reg("--url", "https://hooks.example.com/"+strings.Repeat("p", 3000)), code: 2, says: []string{"url", "longer than 2048"}},
		{name: "empty url", args: reg("--url", ""), code: 2, says: []string{"url", "empty"}},
		// Other registrations.
		{name: "unknown namespace", args: reg("--namespace", "smtp"), code: 2, says: []string{`unknown namespace "smtp"`}},
		{name: "stream with a control character", args: reg("--stream", "hostile/a\x01b"), code: 2, says: []string{"stream", "control"}},
		{name: "stream of 10,000 bytes", args: reg("--stream", long), code: 2, says: []string{"stream", "longer than 200"}},
		{name: "registration id with a newline", args: reg("--id", "r\nlevel=ERROR msg=forged"), code: 2, says: []string{"invalid --id", "control"}},
		{name: "registration id of 10,000 bytes", args: reg("--id", long), code: 2, says: []string{"invalid --id", "longer than 1024"}},
		{name: "webhook secret that is not whsec_", args: reg("--secret", notASecret), code: 2, says: []string{`--secret \(the 1st\)`, "whsec_"}, secret: notASecret},
		{name: "webhook secret too short", args: reg("--secret", "whsec_AAAA"), code: 2, says: []string{`--secret \(the 1st\)`, "decodes to 3 bytes"}},
		{name: "webhook secret from an unset variable", args: reg("--secret", "env:HERALD_CHAOS_UNSET"), code: 2, says: []string{"HERALD_CHAOS_UNSET", "not set"}},
		{name: "a2a flag on a webhook", args: reg("--token", "t"), code: 2, says: []string{"--token does not apply"}},
		{name: "bad --on-4xx", args: reg("--on-4xx", "sometimes"), code: 2, says: []string{`--on-4xx "sometimes"`}},
		{name: "cursor past the head", args: reg("--stream", "hostile/base", "--id", "late", "--from-seq", "99"), code: 2, says: []string{"99"}},
		{name: "cloudevents token with CRLF", args: reg("--namespace", "cloudevents", "--source", "https://s.example", "--token", ceToken+"\r\nX-Evil: 1"), code: 2, says: []string{"--token"}, secret: ceToken},
		{name: "cloudevents without a source", args: reg("--namespace", "cloudevents"), code: 2, says: []string{"--source"}},
		{name: "activitypub key that is not PEM", args: reg("--namespace", "activitypub", "--key-id", "https://a.example/u#k", "--private-key-file", file("notpem", "hello")), code: 2, says: []string{"private"}},
		{name: "activitypub key file missing", args: reg("--namespace", "activitypub", "--key-id", "https://a.example/u#k", "--private-key-file", filepath.Join(s.dir, "missing.pem")), code: 2, says: []string{"--private-key-file", "missing.pem\": no such file"}},
		// Appends.
		{name: "payload that is not JSON", stdin: "{not json", args: []string{"append", "--stream", "hostile/base", "--id", "x1", "--kind", "k"}, code: 2, says: []string{"payload", "not valid JSON"}},
		{name: "payload over 1 MiB", stdin: bigPayload, args: []string{"append", "--stream", "hostile/base", "--id", "x2", "--kind", "k"}, code: 2, says: []string{"payload", "more than the limit"}},
		{name: "record id with an escape sequence", stdin: "{}", args: []string{"append", "--stream", "hostile/base", "--id", "evt\x1b[31m", "--kind", "k"}, code: 2, says: []string{"id", "control"}},
		{name: "record id of 10,000 bytes", stdin: "{}", args: []string{"append", "--stream", "hostile/base", "--id", long, "--kind", "k"}, code: 2, says: []string{"id", "longer than 1024"}},
		{name: "append stream of 10,000 bytes", stdin: "{}", args: []string{"append", "--stream", long, "--id", "x3", "--kind", "k"}, code: 2, says: []string{"stream", "longer than 200"}},
		{name: "append stream with OSC escape", stdin: "{}", args: []string{"append", "--stream", "hostile/\x1b]0;pwned\x07", "--id", "x4", "--kind", "k"}, code: 2, says: []string{"stream", "control"}},
		{name: "append stream not UTF-8", stdin: "{}", args: []string{"append", "--stream", "hostile/\xff\xfe", "--id", "x5", "--kind", "k"}, code: 2, says: []string{"stream", "UTF-8"}},
		{name: "append without a kind", stdin: "{}", args: []string{"append", "--stream", "hostile/base", "--id", "x6"}, code: 2, says: []string{"needs --kind"}},
		{name: "kind with a tab", stdin: "{}", args: []string{"append", "--stream", "hostile/base", "--id", "x7", "--kind", "a\tb"}, code: 2, says: []string{"kind"}},
		{name: "content type with CRLF", stdin: "x", args: []string{"append", "--stream", "hostile/base", "--id", "x8", "--kind", "k", "--content-type", "text/plain\r\nX-Evil: 1"}, code: 2, says: []string{"--content-type", "not a media type"}},
		{name: "duplicate id, different content", stdin: `{"n":2}`, args: []string{"append", "--stream", "hostile/base", "--id", "base-2", "--kind", "k"}, code: 2, says: []string{"base-2", "conflict|different"}},
		{name: "duplicate id in another stream", stdin: `{"n":1}`, args: []string{"append", "--stream", "hostile/other", "--id", "base-2", "--kind", "k"}, code: 2, says: []string{"base-2"}},
		{name: "append to a sealed stream", stdin: "{}", args: []string{"append", "--stream", "hostile/sealed", "--id", "after-final", "--kind", "k"}, code: 2, says: []string{"sealed"}},
		{name: "file with a bad line 3", args: []string{"append", "--file", file("bad3.jsonl", `{"stream":"hostile/f","id":"f1","kind":"k","payload":{}}`+"\n"+`{"stream":"hostile/f","id":"f2","kind":"k","payload":{}}`+"\n"+`{"stream":"hostile/f","id":"f3","kind":"k","payload":{`+"\n")}, code: 2, says: []string{"line 3", "nothing was appended"}},
		{name: "file with an unknown field", args: []string{"append", "--file", file("unknown.jsonl", `{"stream":"hostile/f","id":"f1","kind":"k","payload":{},"evil":1}`+"\n")}, code: 2, says: []string{"line 1", "unknown field"}},
		{name: "file with payload and payload_base64", args: []string{"append", "--file", file("both.jsonl", `{"stream":"hostile/f","id":"f1","kind":"k","payload":{},"payload_base64":"AA=="}`+"\n")}, code: 2, says: []string{"line 1", "not both"}},
		{name: "file with bad base64", args: []string{"append", "--file", file("b64.jsonl", `{"stream":"hostile/f","id":"f1","kind":"k","payload_base64":"***"}`+"\n")}, code: 2, says: []string{"line 1", "payload_base64"}},
		{name: "file with NUL in an id", args: []string{"append", "--file", file("nul.jsonl", `{"stream":"hostile/f","id":"a\u0000b","kind":"k","payload":{}}`+"\n")}, code: 2, says: []string{"id", "control"}},
		{name: "empty file", args: []string{"append", "--file", file("empty.jsonl", "\n\n")}, code: 2, says: []string{"has no records"}},
		{name: "file with a 2 MiB line", args: []string{"append", "--file", file("long.jsonl", `{"stream":"hostile/f","id":"f1","kind":"k","payload":"`+strings.Repeat("x", 2<<20+70<<10)+`"}`+"\n")}, code: 2, says: []string{"line 1", "longer than"}},
		{name: "missing file", args: []string{"append", "--file", filepath.Join(s.dir, "nope.jsonl")}, code: 2, says: []string{"--file", "no such file"}},
		{name: "file repeating an id with other content in a later batch", args: []string{"append", "--file", file("dup.jsonl", manyLines.String()+`{"stream":"hostile/batches","id":"batch-1","kind":"k","payload":{"i":"other"}}`+"\n")}, code: 2, says: []string{"line 502", `"batch-1" repeats the id of line 1`}},
		{name: "file appending after its own final record", args: []string{"append", "--file", file("final.jsonl", `{"stream":"hostile/g","id":"g1","kind":"k","payload":{},"final":true}`+"\n"+`{"stream":"hostile/h","id":"h1","kind":"k","payload":{}}`+"\n"+`{"stream":"hostile/g","id":"g2","kind":"k","payload":{}}`+"\n")}, code: 2, says: []string{"line 3", "sealed by the final record of line 1"}},
		{name: "file repeating an existing id with other content after new lines", args: []string{"append", "--file", file("late-conflict.jsonl", `{"stream":"hostile/i","id":"i1","kind":"k","payload":{}}`+"\n"+`{"stream":"hostile/base","id":"base-2","kind":"k","payload":{"n":"other"}}`+"\n")}, code: 2, says: []string{"line 2", `"base-2" already exists`, "nothing was appended"}},
		{name: "file appending to a sealed stream after new lines", args: []string{"append", "--file", file("late-sealed.jsonl", `{"stream":"hostile/j","id":"j1","kind":"k","payload":{}}`+"\n"+`{"stream":"hostile/sealed","id":"sealed-2","kind":"k","payload":{}}`+"\n")}, code: 2, says: []string{"line 2", "sealed", "nothing was appended"}},
		// Operators' moves.
		{name: "skip to a negative seq", args: []string{"skip", "--stream", "hostile/base", "--id", "r1", "--to-seq", "-1"}, code: 2, says: []string{"to-seq", "-1"}},
		{name: "skip to 2^64", args: []string{"skip", "--stream", "hostile/base", "--id", "r1", "--to-seq", "18446744073709551616"}, code: 2, says: []string{"to-seq", "out of range"}},
		{name: "skip past the head", args: []string{"skip", "--stream", "hostile/base", "--id", "r1", "--to-seq", "99999"}, code: 2, says: []string{"invalid --to-seq", "99999"}},
		{name: "skip to the max uint64", args: []string{"skip", "--stream", "hostile/base", "--id", "r1", "--to-seq", "18446744073709551615"}, code: 2, says: []string{"invalid --to-seq"}},
		{name: "rewind to 0", args: []string{"rewind", "--stream", "hostile/base", "--id", "r1", "--to-seq", "0"}, code: 2, says: []string{"invalid --to-seq", "from 1"}},
		{name: "rewind to the max uint64", args: []string{"rewind", "--stream", "hostile/base", "--id", "r1", "--to-seq", "18446744073709551615"}, code: 2, says: []string{"invalid --to-seq"}},
		{name: "rewind to a word", args: []string{"rewind", "--stream", "hostile/base", "--id", "r1", "--to-seq", "ten"}, code: 2, says: []string{"to-seq"}},
		{name: "skip an unknown registration", args: []string{"skip", "--stream", "hostile/base", "--id", "ghost", "--to-seq", "2"}, code: 2, says: []string{"ghost", "not found"}},
		{name: "unpark an unknown registration", args: []string{"unpark", "--stream", "hostile/nowhere", "--id", "ghost"}, code: 2, says: []string{"not found"}},
		{name: "sweep at a garbage instant", args: []string{"sweep", "--namespace", "webhook", "--at", "yesterday"}, code: 2, says: []string{"--at"}},
		{name: "sweep at negative unix seconds", args: []string{"sweep", "--namespace", "webhook", "--at", "-5"}, code: 2, says: []string{"--at", "out of range"}},
		{name: "sweep with limit 0", args: []string{"sweep", "--namespace", "webhook", "--limit", "0"}, code: 2, says: []string{"--limit 0"}},
		{name: "sweep with drain page 0", args: []string{"sweep", "--namespace", "webhook", "--drain-page", "0"}, code: 2, says: []string{"--drain-page 0", "from 1 to 10000"}},
		{name: "sweep with max attempts 0", args: []string{"sweep", "--namespace", "webhook", "--max-attempts", "0"}, code: 2, says: []string{"--max-attempts 0", "at least 1"}},
		{name: "sweep with a 1s lease", args: []string{"sweep", "--namespace", "webhook", "--lease", "1s"}, code: 2, says: []string{"--lease 1s", "from 2s to 1h0m0s"}},
		{name: "sweep with a negative timeout", args: []string{"sweep", "--namespace", "webhook", "--timeout", "-1s"}, code: 2, says: []string{"invalid --timeout"}},
		{name: "sweep with a bad allow-host", args: []string{"sweep", "--namespace", "webhook", "--allow-host", "*.*.example.com"}, code: 2, says: []string{`invalid --allow-host \(the 1st\)`}},
		{name: "evidence with limit 0", args: []string{"evidence", "--stream", "hostile/base", "--id", "r1", "--limit", "0"}, code: 2, says: []string{"--limit 0"}},
		{name: "registrations with a negative limit", args: []string{"registrations", "--limit", "-1"}, code: 2, says: []string{"--limit -1"}},
		{name: "run every 0s", args: []string{"run", "--every", "0s"}, code: 2, says: []string{"--every"}},
		{name: "run with a 1ms sequencer interval", args: []string{"run", "--sequencer-interval", "1ms"}, code: 2, says: []string{"--sequencer-interval 1ms", "from 5ms to 100ms"}},
		{name: "run with a 1s sequencer interval", args: []string{"run", "--sequencer-interval", "1s"}, code: 2, says: []string{"--sequencer-interval 1s"}},
		{name: "run with max per host 0", args: []string{"run", "--max-per-host", "0"}, code: 2, says: []string{"--max-per-host 0", "from 1 to 1024"}},
		{name: "sweep with max per host 1025", args: []string{"sweep", "--namespace", "webhook", "--max-per-host", "1025"}, code: 2, says: []string{"--max-per-host 1025"}},
		{name: "run an unauthenticated admin API on every address", args: []string{"run", "--admin-addr", "0.0.0.0:0", "--metrics-addr", ""}, code: 2, says: []string{"not a loopback address", "HERALD_ADMIN_TOKEN"}},
		{name: "run metrics on every address in clear", args: []string{"run", "--metrics-addr", "0.0.0.0:0", "--admin-addr", ""}, code: 2, says: []string{"--metrics-addr 0.0.0.0:0 is not a loopback address", "--tls-cert"}},
		{name: "a mysql database", args: []string{"--database", "mysql://root@db/herald", "status"}, code: 2, says: []string{"--database"}},
		{name: "a database URL with a password in a bad scheme", args: []string{"--database", "mysql://root:" + pw + "@db/herald", "status"}, code: 2, says: []string{`--database "mysql…"`}, secret: pw},
		{name: "sqlite without a path", args: []string{"--database", "sqlite:", "status"}, code: 2, says: []string{"needs a path"}},
	}

	for _, hc := range cases {
		before := fingerprint()
		r := c.run(hc.stdin, hc.args...)
		after := fingerprint()
		if r.code != hc.code {
			t.Errorf("%s: exit %d, want %d\n%s", hc.name, r.code, hc.code, r)
		}
		for _, w := range hc.says {
			if !regexp.MustCompile(w).MatchString(r.stderr) {
				t.Errorf("%s: the error does not say %q:\n%s", hc.name, w, r)
			}
		}
		if hc.secret != "" && strings.Contains(r.stdout+r.stderr, hc.secret) {
			t.Errorf("%s: the output repeats the secret it was given:\n%s", hc.name, r)
		}
		t.Logf("%-60s exit %d: %s", hc.name, r.code, cutString(strings.TrimSpace(strings.ReplaceAll(r.stderr, "\n", " | ")), 300))
		if before != after {
			t.Errorf("%s: the database changed:\nbefore: %s\nafter:  %s", hc.name, cutString(before, 3000), cutString(after, 3000))
		}
	}
	n := len(cases)
	n += s.hostileDatabases(ctx)
	n += s.hostileAddresses(ctx, fingerprint)
	s.checkSecrets()
	s.report(map[string]any{"hostile_cases": n})
	t.Logf("%d hostile cases", n)
}

// hostileDatabases: databases herald must refuse without touching them:
// a corrupt SQLite file, another application's SQLite file, SQLite and
// PostgreSQL databases from a newer herald, a PostgreSQL database whose
// migration died half way. It returns the number of cases.
func (s *scenario) hostileDatabases(ctx context.Context) int {
	t := s.t
	sum := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	sqliteExec := func(path string, stmts ...string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, st := range stmts {
			if _, err := db.ExecContext(ctx, st); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
	}
	type dbCase struct {
		name, path string
		says       []string
		code       int // 2 for a file that is not herald's database (a bad --database value), 1 for one herald cannot use
	}
	var cases []dbCase

	corrupt := filepath.Join(s.dir, "corrupt.db")
	if err := os.WriteFile(corrupt, append([]byte("SQLite format 3\x00"), s.bytes(8192)...), 0o600); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, dbCase{"a corrupt SQLite file", corrupt, []string{"corrupt.db", "not a database|malformed|corrupt|cannot"}, 2})

	garbage := filepath.Join(s.dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("this is a text file, not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, dbCase{"a text file as SQLite", garbage, []string{"garbage.db"}, 2})

	other := filepath.Join(s.dir, "other.db")
	sqliteExec(other, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)", "INSERT INTO invoices VALUES (1)")
	cases = append(cases, dbCase{"another application's SQLite file", other, []string{"not a herald database|another application", "invoices"}, 2})

	newer := filepath.Join(s.dir, "newer.db")
	sqlite := &cli{t: t, bin: s.cli.bin, db: "sqlite:" + newer, dir: s.dir, tr: s.cli.tr}
	sqlite.ok("migrate", "up")
	sqliteExec(newer, "UPDATE schema_migrations SET version = 999")
	cases = append(cases, dbCase{"a SQLite database from a newer herald", newer, []string{"upgrade herald", "999"}, 1})

	for _, dc := range cases {
		c := &cli{t: t, bin: s.cli.bin, db: "sqlite:" + dc.path, dir: s.dir, tr: s.cli.tr}
		for _, args := range [][]string{{"status"}, {"registrations"}, {"migrate", "up"}} {
			before := sum(dc.path)
			r := c.run("", args...)
			if r.code != dc.code {
				t.Errorf("%s, %s: exit %d, want %d\n%s", dc.name, args[0], r.code, dc.code, r)
			}
			for _, w := range dc.says {
				if !regexp.MustCompile(w).MatchString(r.stderr) {
					t.Errorf("%s, %s: the error does not say %q:\n%s", dc.name, args[0], w, r)
				}
			}
			if sum(dc.path) != before {
				t.Errorf("%s, %s: the file changed", dc.name, args[0])
			}
		}
	}

	pgCases := 0
	for _, pc := range []struct {
		name   string
		update string
		says   []string
	}{
		{"a PostgreSQL database from a newer herald", "UPDATE herald_schema_migrations SET version = 999", []string{"upgrade herald", "999"}},
		{"a PostgreSQL database whose migration died", "UPDATE herald_schema_migrations SET dirty = true", []string{"dirty|did not finish"}},
	} {
		db := pgtest.NewDatabase(t)
		c := &cli{t: t, bin: s.cli.bin, db: db, dir: s.dir, tr: s.cli.tr}
		c.ok("migrate", "up")
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, pc.update); err != nil {
			t.Fatal(err)
		}
		dump := func() string {
			var v string
			if err := conn.QueryRow(ctx, `SELECT version || ' ' || dirty || ' ' || (SELECT count(*) FROM herald_stream) FROM herald_schema_migrations`).Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		for _, args := range [][]string{{"status"}, {"append", "--stream", "s", "--id", "i", "--kind", "k"}, {"migrate", "up"}} {
			before := dump()
			r := c.run("{}", args...)
			if r.code != 1 {
				t.Errorf("%s, %s: exit %d, want 1\n%s", pc.name, args[0], r.code, r)
			}
			for _, w := range pc.says {
				if !regexp.MustCompile(w).MatchString(r.stderr) {
					t.Errorf("%s, %s: the error does not say %q:\n%s", pc.name, args[0], w, r)
				}
			}
			if dump() != before {
				t.Errorf("%s, %s: the database changed", pc.name, args[0])
			}
		}
		conn.Close(ctx)
		pgCases++
	}
	return len(cases) + pgCases
}

// guarded is an address the transport must refuse at delivery.
type guarded struct {
	url  string
	rule string // a regular expression the parking evidence must match
}

// hostileAddresses registers URLs that are valid but point where herald
// must never connect, appends a record for each, sweeps once with the
// default guard, and checks each is parked at once with the guard's
// evidence, while a loopback trap on the port they name accepts no
// connection. It returns the number of cases.
func (s *scenario) hostileAddresses(ctx context.Context, fingerprint func() string) int {
	t := s.t
	var trapped atomic.Int64
	trap := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	trap.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			trapped.Add(1)
		}
	}
	trap.StartTLS()
	t.Cleanup(trap.Close)
	port := strconv.Itoa(trap.Listener.Addr().(*net.TCPAddr).Port)
	p := ":" + port
	loopback := `127\.0\.0\.0/8 \(loopback\)`
	odd := `non-canonical`
	cases := []guarded{
		{"https://127.0.0.1" + p + "/hook", loopback},
		{"https://127.1.2.3" + p + "/hook", loopback},
		{"https://[::1]" + p + "/hook", `::1/128 \(loopback\)`},
		{"https://[::ffff:127.0.0.1]" + p + "/hook", `IPv4-mapped.*loopback`},
		{"https://[::ffff:7f00:1]" + p + "/hook", `IPv4-mapped.*loopback`},
		{"https://localhost" + p + "/hook", `loopback`},
		{"https://LOCALHOST" + p + "/hook", `loopback`},
		{"https://2130706433" + p + "/hook", odd},
		{"https://0177.0.0.1" + p + "/hook", odd},
		{"https://0x7f.0.0.1" + p + "/hook", odd},
		{"https://0x7f000001" + p + "/hook", odd},
		{"https://017700000001" + p + "/hook", odd},
		{"https://127.1" + p + "/hook", odd},
		{"https://10.0.0.1/hook", `10\.0\.0\.0/8 \(RFC 1918`},
		{"https://172.16.0.1/hook", `172\.16\.0\.0/12 \(RFC 1918`},
		{"https://192.168.1.1/hook", `192\.168\.0\.0/16 \(RFC 1918`},
		{"https://100.64.0.1/hook", `100\.64\.0\.0/10`},
		{"https://169.254.169.254/latest/meta-data/", `169\.254\.0\.0/16 \(link-local, incl. cloud metadata`},
		{"https://[fe80::1]/hook", `fe80::/10 \(link-local`},
		{"https://[fc00::1]/hook", `fc00::/7 \(unique local`},
		{"https://[fd12:3456::1]/hook", `fc00::/7 \(unique local`},
		{"https://0.0.0.0" + p + "/hook", `0\.0\.0\.0/8`},
		{"https://[::]" + p + "/hook", `unspecified`},
		{"https://224.0.0.1/hook", `multicast`},
		{"https://[ff02::1]/hook", `multicast`},
		{"https://255.255.255.255/hook", `reserved`},
		{"https://240.0.0.1/hook", `reserved`},
		{"https://198.18.0.1/hook", `benchmarking`},
		{"https://192.0.2.1/hook", `documentation`},
		{"https://[2001:db8::1]/hook", `documentation`},
		{"https://[64:ff9b::7f00:1]/hook", `NAT64`},
		{"https://[2002:7f00:1::1]/hook", `6to4`},
		{"https://[::127.0.0.1]/hook", `IPv4-compatible`},
		{"https://[::ffff:10.0.0.1]/hook", `IPv4-mapped.*RFC 1918`},
		{"https://[::ffff:169.254.169.254]/hook", `IPv4-mapped.*link-local`},
		{"http://hooks.example.com/hook", `scheme http is not allowed`},
	}
	c := s.cli
	secretFile := filepath.Join(s.dir, "guarded-secret")
	if err := os.WriteFile(secretFile, []byte(s.webhookSecret()), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i, gc := range cases {
		stream := fmt.Sprintf("guarded/%02d", i)
		before := fingerprint()
		if r := c.run("", "register", "--stream", stream, "--id", "r", "--namespace", "webhook", "--url", gc.url, "--secret", "file:"+secretFile); r.code != 0 {
			t.Errorf("%s: registration refuses a syntactically valid URL (the transport's guard is the one to refuse it):\n%s", gc.url, r)
		}
		if before == fingerprint() {
			t.Errorf("%s: registering changed nothing", gc.url)
		}
		fmt.Fprintf(&lines, `{"stream":%q,"id":"guarded-%d","kind":"k","payload":{}}`+"\n", stream, i)
	}
	records := filepath.Join(s.dir, "guarded.jsonl")
	if err := os.WriteFile(records, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("append", "--file", records)
	r := c.run("", "sweep", "--namespace", "webhook", "--at", "2026-03-15T11:00:00Z", "--limit", "1000", "--json")
	if r.code != 3 {
		t.Errorf("the sweep must park and exit 3:\n%s", r)
	}
	for i, gc := range cases {
		stream := fmt.Sprintf("guarded/%02d", i)
		var evs []store.Evidence
		c.json(&evs, "evidence", "--stream", stream, "--id", "r")
		switch {
		case len(evs) != 1 || evs[0].Event != store.EventParked || evs[0].Attempt != 1:
			t.Errorf("%s: want parked at the first attempt, evidence: %+v", gc.url, evs)
		case !strings.HasPrefix(evs[0].Error, "netguard: ") || !regexp.MustCompile(gc.rule).MatchString(evs[0].Error):
			t.Errorf("%s: the evidence %q is not the guard's refusal matching %q", gc.url, evs[0].Error, gc.rule)
		default:
			t.Logf("%-45s parked: %s", gc.url, evs[0].Error)
		}
	}
	if n := trapped.Load(); n != 0 {
		t.Errorf("the loopback trap at port %s accepted %d connections: the guard let a refused address through", port, n)
	}
	var raw []json.RawMessage
	c.json(&raw, "registrations", "--parked", "--limit", "1000")
	if len(raw) != len(cases) {
		t.Errorf("%d registrations parked, want the %d guarded ones", len(raw), len(cases))
	}
	return len(cases)
}

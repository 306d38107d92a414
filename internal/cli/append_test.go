package cli

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store/sqlite"
)

// FuzzParseLine: a line of an `append --file` never panics the parser, and
// what it accepts either validates as an entry or is refused with a clear
// ErrInvalid, never anything else.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt-1","kind":"order.created","payload":{"total":42}}`,
		`{"id":"b","kind":"blob","content_type":"image/png","payload_base64":"iVBORw0KGgo="}`,
		`{"id":"t","kind":"note","content_type":"text/plain","payload":"hello"}`,
		`{"id":"x","kind":"k","payload":{},"final":true,"stream":"order/1002"}`,
		`{"id":"x","kind":"k","payload":1,"payload_base64":"AA=="}`,
		`{"id":"x","kind":"k","unknown":1}`,
		`{"id":"\u0000","kind":"k k","payload":[`,
		`[]`, `null`, `"str"`, ``,
	} {
		f.Add([]byte(seed), "s")
	}
	f.Fuzz(func(t *testing.T, raw []byte, stream string) {
		e, s, err := parseLine(raw, stream)
		if err != nil {
			return
		}
		if _, err := journal.ValidateEntries(s, []journal.Entry{e}, 0); err != nil && !errors.Is(err, journal.ErrInvalid) {
			t.Fatalf("validation failed without ErrInvalid: %v", err)
		}
	})
}

// An append --file stopped half way, after its first transaction
// committed, exits 1, not 2: exit 2 says nothing was changed, and the
// records of the first transaction are stored (the error says how many).
// The stop is another writer's id taking the second transaction's place,
// played here by a trigger that makes its first insert a unique violation.
func TestAppendStoppedHalfWayIsNotAUsageError(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	heraldOK(t, db, "", "migrate", "up")
	conn, err := sql.Open("sqlite", db)
	require.NoError(t, err)
	_, err = conn.Exec(fmt.Sprintf(`CREATE TRIGGER taken BEFORE INSERT ON herald_record WHEN NEW.id = 'evt-%d'
BEGIN INSERT INTO herald_record SELECT * FROM herald_record LIMIT 1; END`, appendBatch+1))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	var lines strings.Builder
	for i := 1; i <= appendBatch+1; i++ {
		fmt.Fprintf(&lines, `{"id": "evt-%d", "kind": "k", "payload": {}}`+"\n", i)
	}
	file := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o600))

	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Contains(t, r.stderr, fmt.Sprintf("%d records stored before it", appendBatch), r.stderr)
	require.Equal(t, ExitError, r.code, "records were stored: not exit 2 (nothing was changed)\n%s", r.stderr)
}

// A payload over the limit is reported with its size, not where reading
// stopped.
func TestAppendNamesThePayloadSize(t *testing.T) {
	db := newDB(t)
	big := `"` + strings.Repeat("x", 5<<20) + `"`
	r := runCLI(t, db, big, "append", "--stream", "s", "--id", "big", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("is %d bytes, more than the limit of 1048576 (1 MiB)", len(big)))
}

// Appending an identical record again says it was already there; a file says
// how many were; counts are English.
func TestAppendSaysWhatExisted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	require.Equal(t, "Appended s#1 (id e1).\n", heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k"))
	require.Equal(t, "Already in the journal: s#1 (id e1), same content; nothing was appended.\n",
		heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k"))
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, `{"a":1}`, "append", "--stream", "s", "--id", "e1", "--kind", "k", "--json")), &out))
	require.Equal(t, true, out[0]["existed"])

	file := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"e1","kind":"k","payload":{"a":1}}`+"\n"+`{"id":"e2","kind":"k","payload":{}}`+"\n"), 0o600))
	require.Equal(t, "Appended 1 of 2 records to 1 stream: 1 was already in the journal with the same content.\n",
		heraldOK(t, db, "", "append", "--stream", "s", "--file", file))
}

// A single append's bad value is named by the flag (or stdin) it came by, not
// the library's entries[0].field.
func TestOneAppendNamesTheFlag(t *testing.T) {
	db := newDB(t)
	for stdin, c := range map[string]struct {
		args []string
		says string
	}{
		"not json": {[]string{"--kind", "k"}, "invalid payload (stdin): is not valid JSON"},
		"{}":       {[]string{"--kind", "a b"}, "invalid --kind: has whitespace U+0020 at byte 1"},
	} {
		r := runCLI(t, db, stdin, append([]string{"append", "--stream", "s", "--id", "e1"}, c.args...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, c.says)
		require.NotContains(t, r.stderr, "entries[0]")
	}
	require.NoFileExists(t, db, "nothing was appended, no database made")
}

// A JSON Lines entry's validation error names its line, not its place in the
// batch, and a missing payload is called missing.
func TestAFileErrorNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	file := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(file, []byte("{\"id\":\"a1\",\"kind\":\"k\",\"payload\":{}}\n\n{\"id\":\"a2\",\"kind\":\"k\"}\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+" line 3: invalid payload: is missing or empty: content type application/json requires a JSON value (nothing was appended)")
	require.NoFileExists(t, db, "nothing was created")

	require.NoError(t, os.WriteFile(file, []byte("{\"id\":\"a1\",\"kind\":\"\",\"payload\":{}}\n"), 0o600))
	r = runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+" line 1: invalid kind: is empty")

	r = runCLI(t, db, "", "append", "--stream", "s", "--id", "x", "--kind", "k", "--content-type", "application/json")
	require.Equal(t, ExitUsage, r.code, r.stderr)
}

// An append that conflicts with a record of a stream whose name holds an
// override names that stream quoted, never raw.
func TestAConflictNamesAHostileStreamQuoted(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, `{}`, "append", "--stream", "x/\u202Egnp.exe", "--id", "r1", "--kind", "k")
	r := runCLI(t, db, `{}`, "append", "--stream", "x/other", "--id", "r1", "--kind", "k")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `already exists as "x/\u202egnp.exe"#1 with a different stream`)
	require.NotContains(t, r.stderr, "\u202E")
}

// append's answer shows a long stream name whole (a table cell would cut it),
// and a --file error about a repeated id names the other line, not what the
// id itself says.
func TestAppendAnswersWholeAndNamesLinesRight(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	long := "orders/" + strings.Repeat("a", 90)
	require.Equal(t, "Appended "+long+"#1 (id e1).\n", heraldOK(t, db, `{}`, "append", "--stream", long, "--id", "e1", "--kind", "k"))

	file := filepath.Join(dir, "dup.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"entries[0].x","kind":"k","payload":{}}`+"\n"+`{"id":"entries[0].x","kind":"k","payload":{}}`+"\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, file+` line 2: invalid id: "entries[0].x" repeats the id of line 1`)
}

// A --file line with more after its record object (a second record, a stray
// brace) is refused, not appended with the rest lost.
func TestAFileLineIsOneObject(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	for _, line := range []string{
		`{"id":"t1","kind":"k","payload":{}} {"id":"t2","kind":"k","payload":{}}`,
		`{"id":"t1","kind":"k","payload":{}}}`,
		`{"id":"t1","kind":"k","payload":{}} garbage`,
	} {
		file := filepath.Join(dir, "in.jsonl")
		require.NoError(t, os.WriteFile(file, []byte(line+"\n"), 0o600))
		r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
		require.Equal(t, ExitUsage, r.code, "%s: %s", line, r.stderr)
		require.Contains(t, r.stderr, "line 1: invalid record: holds more than one JSON value", line)
		require.NoFileExists(t, db, "nothing was appended")
	}
}

// A --file line that is not UTF-8, or that gives a key twice, is refused
// naming its line, not appended with its bytes replaced or a value lost.
func TestAFileLineIsUTF8WithEachKeyOnce(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	file := filepath.Join(dir, "in.jsonl")
	for line, want := range map[string]string{
		"{\"id\":\"a\xff\",\"kind\":\"k\",\"payload\":{}}": "line 2: invalid record: is not valid UTF-8 (byte 9)",
		`{"id":"a","id":"b","kind":"k","payload":{}}`:      `line 2: invalid record: has the key "id" twice: give it once`,
	} {
		require.NoError(t, os.WriteFile(file, []byte(`{"id":"ok","kind":"k","payload":{}}`+"\n"+line+"\n"), 0o600))
		r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
		require.Equal(t, ExitUsage, r.code, "%s: %s", line, r.stderr)
		require.Contains(t, r.stderr, file+" "+want, line)
		require.NoFileExists(t, db, "nothing was appended")
	}
}

// A line of append --file is a record as the HTTP API takes it: its own
// trace context, and a text payload given as a JSON string.
func TestAFileLineIsARecordAsTheAPITakesIt(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	file := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"n1","kind":"note","content_type":"text/plain","payload":"hi\n","traceparent":"`+tp+`","tracestate":"vendor=1"}`+"\n"), 0o600))
	heraldOK(t, db, "", "append", "--stream", "s", "--file", file)
	s, err := sqlite.Open(t.Context(), db)
	require.NoError(t, err)
	defer s.Close()
	rec, err := s.Lookup(t.Context(), "n1")
	require.NoError(t, err)
	require.Equal(t, "hi\n", string(rec.Payload))
	require.Equal(t, tp, rec.Traceparent)
	require.Equal(t, "vendor=1", rec.Tracestate)
	var page struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "records", "--stream", "s", "--json")), &page))
	require.Equal(t, "hi\n", page.Records[0]["payload"], "records --json gives text back as a line gives it")
	require.Equal(t, tp, page.Records[0]["traceparent"])

	require.NoError(t, os.WriteFile(file, []byte(`{"id":"n2","kind":7}`+"\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "line 1: invalid kind: is a JSON number; want a string", "named as the API names it")
}

// A null payload is JSON's null for a JSON type, from stdin or a line
// (stored as its 4 bytes, given back as null by records --json); a line of
// another type with a null payload is refused naming its line and field,
// nothing appended.
func TestAppendTakesNullOnlyAsJSON(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "herald.db")
	heraldOK(t, db, "null", "append", "--stream", "s", "--id", "n1", "--kind", "k")
	file := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"n2","kind":"k","payload":null}`+"\n"), 0o600))
	heraldOK(t, db, "", "append", "--stream", "s", "--file", file)
	var page struct{ Records []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "records", "--stream", "s", "--json")), &page))
	require.Len(t, page.Records, 2)
	for _, r := range page.Records {
		v, ok := r["payload"]
		require.True(t, ok, "%s: payload shown", r["id"])
		require.Nil(t, v, "%s: payload null", r["id"])
	}

	require.NoError(t, os.WriteFile(file, []byte(`{"id":"t1","kind":"k","content_type":"text/plain","payload":null}`+"\n"), 0o600))
	r := runCLI(t, db, "", "append", "--stream", "s", "--file", file)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `line 1: invalid payload: is a JSON null, but content_type "text/plain" takes a JSON string (its text) or payload_base64 (its bytes)`)
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "records", "--stream", "s", "--json")), &page))
	require.Len(t, page.Records, 2, "nothing appended")
}

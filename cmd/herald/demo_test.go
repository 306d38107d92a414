package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/bintest"
	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/internal/pgtest"
)

// demoSummary is the part of `herald demo --json` the tests read.
type demoSummary struct {
	OK            bool     `json:"ok"`
	Failures      []string `json:"failures"`
	Records       int      `json:"records"`
	Seconds       float64  `json:"seconds"`
	Registrations []struct {
		Stream    string `json:"stream"`
		ID        string `json:"id"`
		Receiver  string `json:"receiver"`
		Verifies  bool   `json:"verifies"`
		Expected  int    `json:"expected"`
		Verified  int    `json:"verified"`
		Delivered int    `json:"delivered"`
		Retried   int    `json:"retried"`
		Parked    bool   `json:"parked"`
		State     string `json:"state"`
		NextSeq   uint64 `json:"next_seq"`
		Head      uint64 `json:"head"`
	} `json:"registrations"`
	Receivers []struct {
		Name     string `json:"name"`
		Verifies bool   `json:"verifies"`
		Expected int    `json:"expected"`
		Verified int    `json:"verified"`
		Refused  int    `json:"refused"`
		Failures int    `json:"failures"`
	} `json:"receivers"`
	Recovered []struct {
		Stream    string `json:"stream"`
		WasParked bool   `json:"was_parked"`
		FromSeq   uint64 `json:"from_seq"`
		NextSeq   uint64 `json:"next_seq"`
		Head      uint64 `json:"head"`
		Verified  int    `json:"verified"`
		Expected  int    `json:"expected"`
		Recovered bool   `json:"recovered"`
	} `json:"recovered"`
}

// runDemo runs the built binary's demo as a newcomer would, in an empty
// directory, and returns its stdout, stderr, exit code and wall time.
func runDemo(t *testing.T, args ...string) (string, string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
	cmd.Dir = t.TempDir()
	start := time.Now()
	stdout, stderr, code := bintest.Run(t, cmd, "")
	took := time.Since(start)
	t.Logf("herald demo %s: exit %d in %v", strings.Join(args, " "), code, took.Round(time.Millisecond))
	return stdout, stderr, code, took
}

// checkDemo asserts what `herald demo --json` must show: every verifying
// receiver verified exactly what the journal says it should have received,
// and something; nothing failed verification; the 410 receiver's
// registration is parked at cursor 1; the down receiver's recovered after
// its unpark. And it was quick.
func checkDemo(t *testing.T, args ...string) demoSummary {
	t.Helper()
	stdout, stderr, code, took := runDemo(t, append(args, "--json")...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Less(t, took, 45*time.Second, "well under a minute")
	var sum demoSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum), "--json printed %q", stdout)
	require.True(t, sum.OK)
	require.Empty(t, sum.Failures)

	verifying := 0
	for _, r := range sum.Receivers {
		require.Zero(t, r.Failures, "%s refused nothing", r.Name)
		if r.Verifies {
			verifying++
			require.Positive(t, r.Verified, "%s verified something", r.Name)
			require.Equal(t, r.Expected, r.Verified, "%s verified what the journal says it should have received", r.Name)
		}
	}
	require.Equal(t, 6, verifying, "inbox, cloudevents, a2a, webhook, flaky and down verify")

	gone, down := 0, 0
	for _, r := range sum.Registrations {
		name := r.Stream + "/" + r.ID
		switch r.Receiver {
		case "gone":
			gone++
			require.True(t, r.Parked, name)
			require.Equal(t, uint64(1), r.NextSeq, "%s parked with its cursor intact", name)
			require.Zero(t, r.Delivered)
		case "down":
			down++
			require.False(t, r.Parked, name)
		case "flaky":
			require.Equal(t, 3, r.Retried, "%s rode out three 503s", name)
		}
		if r.Verifies {
			require.Equal(t, r.Expected, r.Verified, name)
		}
	}
	require.Positive(t, gone)
	require.Len(t, sum.Recovered, down)
	for _, rc := range sum.Recovered {
		require.True(t, rc.WasParked, "%s was parked before its unpark", rc.Stream)
		require.Equal(t, uint64(1), rc.FromSeq)
		require.True(t, rc.Recovered, rc.Stream)
		require.Equal(t, rc.Head+1, rc.NextSeq, "%s caught up to the head", rc.Stream)
		require.Equal(t, rc.Expected, rc.Verified)
		require.Positive(t, rc.Verified)
	}
	return sum
}

func TestDemoEmbeddedExamples(t *testing.T) {
	t.Parallel()
	sum := checkDemo(t)
	require.Equal(t, 20, sum.Records)
}

func TestDemoCorpus(t *testing.T) {
	t.Parallel()
	corpus := corpustest.Dir(t, "") // testdata/corpus, or $HERALD_CORPUS
	sum := checkDemo(t, "--corpus", corpus)
	if corpustest.Shared() {
		require.Greater(t, sum.Records, 200)
	} else {
		activities, _ := filepath.Glob(filepath.Join(corpus, "activitystreams", "*.json"))
		payloads, _ := filepath.Glob(filepath.Join(corpus, "github", "*", "*.json"))
		tasks, _ := filepath.Glob(filepath.Join(corpus, "a2a", "*.jsonl"))
		lines := 0
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			lines += bytes.Count(b, []byte("\n"))
		}
		require.Equal(t, len(activities)+len(payloads)+lines, sum.Records, "every activity, payload and A2A line of testdata/corpus")
	}
}

// The demo on PostgreSQL: a fresh database is migrated and used as the
// embedded default is.
func TestDemoPostgres(t *testing.T) {
	t.Parallel()
	sum := checkDemo(t, "--database", pgtest.NewDatabase(t))
	require.Equal(t, 20, sum.Records)
}

// What a newcomer reads: the narration, the table per registration, the
// parked table of `herald registrations --parked`, the unpark and the
// recovery, the verdict; progress on stderr.
func TestDemoOutput(t *testing.T) {
	t.Parallel()
	stdout, stderr, code, _ := runDemo(t)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	for _, want := range []string{
		"Receivers, each a real HTTP server on loopback:",
		"STREAM", "VERIFIED", "actor/alice", "4/4",
		"$ herald registrations --parked",
		"LAST ERROR", "410 Gone", "(attempt 3 of 3: retry ceiling",
		"$ herald unpark --stream webhooks/shop --id down",
		"Unparked stream=webhooks/shop id=down: due now at cursor 1 (5 records to deliver).",
		"stream=webhooks/shop id=down caught up",
		"stream=webhooks/shop id=gone stays parked at cursor 1",
		"OK in",
	} {
		require.Contains(t, stdout, want)
	}
	require.Less(t, strings.Index(stdout, "VERIFIED"), strings.Index(stdout, "$ herald registrations --parked"))
	require.Less(t, strings.Index(stdout, "--parked"), strings.Index(stdout, "$ herald unpark"))
	require.Contains(t, stderr, "messages delivered", "progress lines")
	// The verdict's count adds up to the progress lines' whole.
	m := regexp.MustCompile(`/(\d+) messages delivered`).FindAllStringSubmatch(stderr, -1)
	require.NotEmpty(t, m, stderr)
	v := regexp.MustCompile(`\((\d+) messages\), .* its (\d+) kept \((\d+) in all\)`).FindStringSubmatch(stdout)
	require.NotNil(t, v, stdout)
	verified, _ := strconv.Atoi(v[1])
	kept, _ := strconv.Atoi(v[2])
	require.Equal(t, m[len(m)-1][1], v[3])
	require.Equal(t, fmt.Sprint(verified+kept), v[3])
	require.Equal(t, 5, kept, "the 410 receiver's 5 records")
	require.NotContains(t, stdout+stderr, "whsec_", "no secret is printed")
	require.NotContains(t, stdout+stderr, "PRIVATE KEY")
}

// Bad flags are a usage error; a used database is refused and left alone.
func TestDemoRefusals(t *testing.T) {
	t.Parallel()
	_, stderr, code, _ := runDemo(t, "--corpus", filepath.Join(t.TempDir(), "none"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "laid out as testdata/corpus")

	_, stderr, code, _ = runDemo(t, "--duration", "0s")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--duration 0s must be positive")

	db := "sqlite:" + filepath.Join(t.TempDir(), "used.db")
	h := newHerald(t, db)
	h.ok("register", "--stream", "orders", "--id", "billing", "--namespace", "webhook", "--url", "https://billing.example/hooks", "--secret", secret)
	_, stderr, code, _ = runDemo(t, "--database", db)
	require.Equal(t, 2, code, "a database in use is a bad --database value")
	require.Contains(t, stderr, "already has registrations (stream=orders id=billing, …): the demo needs an empty database")
	var regs []view
	h.json(&regs, "registrations")
	require.Len(t, regs, 1, "nothing was changed")
}

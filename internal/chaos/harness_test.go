package chaos

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"strconv"

	"github.com/heraldpush/herald/internal/bintest"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/seal"
)

// bin is the herald binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	if addr := os.Getenv(envClient); addr != "" {
		os.Exit(clientMain(addr)) // a child of TestKillDrainedWaitsForTheDeadProcesssRequests
	}
	dir, err := os.MkdirTemp("", "herald-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err = bintest.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// scenario is one chaos run: its mode, its seeded randomness, the herald
// command on its database, and the secrets it must never see printed.
type scenario struct {
	t       *testing.T
	mode    Mode
	seed    int64
	rng     *rand.Rand
	rngMu   sync.Mutex
	cli     *cli
	dir     string
	keyring *seal.Keyring // every herald of the scenario seals with it (HERALD_KEYRING)
	secrets []string
	started time.Time
	dbUp    *gate // set by scenarios that restart the database
}

func newScenario(t *testing.T, db string) *scenario {
	t.Helper()
	mode, seed, err := modeFromEnv(os.Getenv, func() int64 { return time.Now().UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s mode, seed %d (replay the plan with %s=%s %s=%d)", mode.Name, seed, EnvMode, mode.Name, EnvSeed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: rerun with %s=%s %s=%d go test -run '^%s$' ./internal/chaos", seed, EnvMode, mode.Name, EnvSeed, seed, t.Name())
		}
	})
	dir := t.TempDir()
	s := &scenario{t: t, mode: mode, seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		dir: dir, started: time.Now(), keyring: seal.Generate()}
	s.cli = &cli{t: t, bin: bin, db: db, dir: dir, tr: &transcript{}, env: []string{"HERALD_KEYRING=" + string(s.keyring.Marshal())}}
	return s
}

// intN draws from the scenario's seeded randomness (safe for concurrent use).
func (s *scenario) intN(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *scenario) bytes(n int) []byte {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(s.rng.UintN(256))
	}
	return b
}

// webhookSecret returns a fresh Standard Webhooks secret, remembered for
// the search for leaks (whole, and its base64 key alone).
func (s *scenario) webhookSecret() string {
	key := base64.StdEncoding.EncodeToString(s.bytes(32))
	s.secrets = append(s.secrets, "whsec_"+key, key)
	return "whsec_" + key
}

// token returns a fresh bearer token, remembered for the search for leaks.
func (s *scenario) token(prefix string) string {
	tok := prefix + hex.EncodeToString(s.bytes(20))
	s.secrets = append(s.secrets, tok)
	return tok
}

// checkSecrets fails the test if any secret appears in any log line or
// output the scenario's herald processes printed.
func (s *scenario) checkSecrets() {
	s.t.Helper()
	found, searched, err := s.cli.tr.leaks(s.secrets)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(found) > 0 {
		s.t.Errorf("secrets leaked into herald's output:\n%s", strings.Join(found, "\n"))
	}
	if searched == 0 || len(s.secrets) == 0 {
		s.t.Errorf("the search for secrets searched %d bytes for %d secrets: it proves nothing", searched, len(s.secrets))
	}
	s.t.Logf("searched %d bytes of logs and output for %d secrets: none found", searched, len(s.secrets))
}

// report logs the scenario's figures and appends them to EnvReport's file.
func (s *scenario) report(figures map[string]any) {
	figures["scenario"] = s.t.Name()
	figures["mode"] = s.mode.Name
	figures["seed"] = s.seed
	figures["seconds"] = time.Since(s.started).Round(time.Millisecond).Seconds()
	b, _ := json.Marshal(figures)
	s.t.Logf("figures: %s", b)
	if path := os.Getenv(EnvReport); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			s.t.Errorf("%s: %v", EnvReport, err)
			return
		}
		defer f.Close()
		_, _ = f.Write(append(b, '\n'))
	}
}

// logTail returns the end of a file, for failure messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// record is one line of an `append --file`.
type record struct {
	Stream  string          `json:"stream"`
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	Final   bool            `json:"final,omitempty"`
}

// recordID is the id of the record the harness appends at seq of stream:
// the receivers read the seq back from the webhook-id.
func recordID(stream string, seq uint64) string { return fmt.Sprintf("%s#%d", stream, seq) }

// parseRecordID splits a recordID.
func parseRecordID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return "", 0, false
	}
	if _, err := fmt.Sscanf(id[i+1:], "%d", &seq); err != nil || seq == 0 || fmt.Sprint(seq) != id[i+1:] {
		return "", 0, false
	}
	return id[:i], seq, true
}

// writeRecords writes an append --file for seqs from..to of every stream,
// interleaved stream by stream.
func writeRecords(path string, streams []string, from, to uint64) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, st := range streams {
		for seq := from; seq <= to; seq++ {
			payload := fmt.Sprintf(`{"stream":%q,"seq":%d}`, st, seq)
			if err := enc.Encode(record{Stream: st, ID: recordID(st, seq), Kind: "chaos.tick", Payload: json.RawMessage(payload)}); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// appendRounds appends records 1..perStream of every stream with `herald
// append --file`, in rounds, repeating a round that failed (an append is
// idempotent: repeating it is the documented recovery). It returns the
// failed attempts' results.
func (s *scenario) appendRounds(ctx context.Context, streams []string, perStream, rounds int) ([]result, error) {
	var failures []result
	per := (perStream + rounds - 1) / rounds
	for r := 0; r < rounds; r++ {
		from, to := uint64(r*per+1), uint64(min((r+1)*per, perStream))
		if from > to {
			break
		}
		path := filepath.Join(s.dir, fmt.Sprintf("round-%03d.jsonl", r))
		if err := writeRecords(path, streams, from, to); err != nil {
			return failures, err
		}
		for try := 0; ; try++ {
			if ctx.Err() != nil {
				return failures, ctx.Err()
			}
			res := s.cli.run("", "append", "--file", path)
			if res.code == 0 {
				break
			}
			failures = append(failures, res)
			if s.dbUp == nil || try == 100 {
				return failures, fmt.Errorf("append round %d failed (%d tries); last:\n%s", r, try+1, res)
			}
			// The database is away (a restart): try again once it is back.
			if err := s.dbUp.wait(ctx); err != nil {
				return failures, err
			}
		}
	}
	return failures, nil
}

// gate is open while the database is up: the harness closes it before a
// restart and opens it when pg_ctl says the server is back.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // closed while open
}

func newGate() *gate {
	g := &gate{ch: make(chan struct{})}
	close(g.ch)
	return g
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ch = make(chan struct{})
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch)
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Environment variables the harness reads.
const (
	// EnvMode selects the size of the runs: "" or "short" (CI), "long".
	EnvMode = "HERALD_CHAOS"
	// EnvSeed replays the plan of an earlier run: a decimal int64.
	EnvSeed = "HERALD_CHAOS_SEED"
	// EnvReport names a file the scenarios append their figures to, one
	// JSON object a line.
	EnvReport = "HERALD_CHAOS_REPORT"
)

// Mode is the size of a run.
type Mode struct {
	Name    string
	Crash   CrashPlan
	Restart CrashPlan // the PostgreSQL restart scenario reuses the crash layout, without kills
	Faults  FaultPlan
}

// CrashPlan sizes the crash scenario.
type CrashPlan struct {
	Workers          int           // herald run processes
	Streams          int           // streams, each with RegsPerStream registrations
	RegsPerStream    int           // registrations per stream (fan-out)
	RecordsPerStream int           // records appended to each stream
	Rounds           int           // append --file calls the records are split into
	Kills            int           // SIGKILLs (0 for the restart scenario)
	Restarts         int           // PostgreSQL restarts (restart scenario only)
	DrainPage        int           // --drain-page: the bound on duplicates per kill
	Lease            time.Duration // --lease: how long a dead worker's claims stay hidden
	Stall            time.Duration // no new delivery for this long fails the run
	// Windows are the registrations' windows, in turn (none: 1 each);
	// MaxPerHost is the workers' --max-per-host (0: the default), which
	// bounds a window on the fleet's one receiver host.
	Windows    []int
	MaxPerHost int
}

// Records is the number of records the plan appends.
func (p CrashPlan) Records() int { return p.Streams * p.RecordsPerStream }

// Registrations is the number of registrations the plan makes.
func (p CrashPlan) Registrations() int { return p.Streams * p.RegsPerStream }

// Deliveries is the number of distinct (registration, record) pairs the
// receivers must see.
func (p CrashPlan) Deliveries() int { return p.Registrations() * p.RecordsPerStream }

// FaultPlan sizes the faulty receivers scenario.
type FaultPlan struct {
	PerProfile int // registrations per receiver profile
	Records    int // records per registration's stream
}

// windows are the fleets' registrations' windows, in turn: strict order, a
// small window and a far receiver's. A window never reaches past
// the drain page or the backlog, so the crash plans' pages are at least 16
// and their rounds append more than a page to each stream.
var windows = []int{1, 4, 16}

var modes = map[string]Mode{
	"short": newMode("short", 16, 3*time.Second,
		CrashPlan{Workers: 3, Streams: 60, RegsPerStream: 2, RecordsPerStream: 40, Rounds: 2, Kills: 10, Stall: 60 * time.Second},
		CrashPlan{Workers: 2, Streams: 40, RegsPerStream: 2, RecordsPerStream: 30, Rounds: 6, Restarts: 2, Stall: 90 * time.Second},
		FaultPlan{PerProfile: 1, Records: 4}),
	"long": newMode("long", 25, 5*time.Second,
		CrashPlan{Workers: 4, Streams: 500, RegsPerStream: 2, RecordsPerStream: 200, Rounds: 5, Kills: 300, Stall: 3 * time.Minute},
		CrashPlan{Workers: 4, Streams: 200, RegsPerStream: 2, RecordsPerStream: 100, Rounds: 20, Restarts: 3, Stall: 3 * time.Minute},
		FaultPlan{PerProfile: 4, Records: 6}),
}

// newMode is the mode name whose crash and restart plans share a drain
// page, a lease, the windows and a --max-per-host of 64.
func newMode(name string, page int, lease time.Duration, crash, restart CrashPlan, faults FaultPlan) Mode {
	for _, p := range []*CrashPlan{&crash, &restart} {
		p.DrainPage, p.Lease, p.Windows, p.MaxPerHost = page, lease, windows, 64
	}
	return Mode{Name: name, Crash: crash, Restart: restart, Faults: faults}
}

// modeFromEnv returns the mode and seed the environment asks for. A mode
// or seed it does not know is an error, never a silent default.
func modeFromEnv(getenv func(string) string, fresh func() int64) (Mode, int64, error) {
	name := getenv(EnvMode)
	if name == "" {
		name = "short"
	}
	m, ok := modes[name]
	if !ok {
		return Mode{}, 0, fmt.Errorf("%s=%q: want short (the default) or long", EnvMode, name)
	}
	seed := fresh()
	if s := getenv(EnvSeed); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Mode{}, 0, fmt.Errorf("%s=%q: want a decimal int64", EnvSeed, s)
		}
		seed = n
	}
	return m, seed, nil
}

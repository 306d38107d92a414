package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// regSpec is one registration of a fleet.
type regSpec struct {
	key    string // the ledger's name for it: stream + " " + id
	stream string
	id     string
	path   string // its receiver's path
	secret string
	window int // its Registration.Window
}

// fleet is the crash and restart scenarios' world: streams, their
// registrations (several per stream), and one loopback receiver that
// verifies every request with the Standard Webhooks library and records
// what it acknowledged in a ledger.
type fleet struct {
	s        *scenario
	plan     CrashPlan
	streams  []string
	regs     []regSpec
	byPath   map[string]*regSpec
	verifier map[string]*standardwebhooks.Webhook
	ledger   *Ledger
	srv      *httptest.Server
	conns    *connWatch      // srv's connections, for killDrained
	store    *postgres.Store // the harness's own view of the database
	workers  []*proc
	logs     []string
	started  int // worker processes started, incarnations included

	mu       sync.Mutex
	inFlight map[string]int // requests of each registration being served now
	most     map[string]int // the most of them at once
}

// viaCLI is how many registrations of a fleet are made with `herald
// register` (the rest through the store, which is much faster).
const viaCLI = 4

func (s *scenario) newFleet(ctx context.Context, plan CrashPlan, prefix string) *fleet {
	t := s.t
	f := &fleet{s: s, plan: plan, byPath: map[string]*regSpec{}, verifier: map[string]*standardwebhooks.Webhook{}, ledger: NewLedger(),
		inFlight: map[string]int{}, most: map[string]int{}, conns: newConnWatch()}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Config.ConnState = f.conns.hook
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	s.cli.ok("migrate", "up")
	st, err := postgres.Open(ctx, s.cli.db, postgres.WithKeyring(s.keyring))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f.store = st
	for i := 0; i < plan.Streams; i++ {
		stream := fmt.Sprintf("%s/s%04d", prefix, i)
		f.streams = append(f.streams, stream)
		for j := 0; j < plan.RegsPerStream; j++ {
			r := regSpec{stream: stream, id: fmt.Sprintf("r%d", j), path: fmt.Sprintf("/r/%d/%d", i, j), secret: s.webhookSecret(), window: 1}
			if len(plan.Windows) > 0 {
				r.window = plan.Windows[len(f.regs)%len(plan.Windows)]
			}
			r.key = r.stream + " " + r.id
			f.regs = append(f.regs, r)
		}
	}
	for i := range f.regs {
		r := &f.regs[i]
		f.byPath[r.path] = r
		wh, err := standardwebhooks.NewWebhook(r.secret)
		if err != nil {
			t.Fatal(err)
		}
		f.verifier[r.key] = wh
		url := f.srv.URL + r.path
		if i < viaCLI {
			secretFile := filepath.Join(s.dir, fmt.Sprintf("secret-%d", i))
			if err := os.WriteFile(secretFile, []byte(r.secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s.cli.ok("register", "--stream", r.stream, "--id", r.id, "--namespace", "webhook", "--url", url, "--secret", "file:"+secretFile,
				"--window", strconv.Itoa(r.window), "--json")
			continue
		}
		cfg, err := webhook.Config{Secrets: []string{r.secret}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Register(ctx, push.Registration{Stream: r.stream, ID: r.id, Namespace: webhook.Namespace, URL: url, Config: cfg, Window: r.window}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// ServeHTTP is the receiver: it verifies the Standard Webhooks signature,
// reads the seq from the webhook-id and checks it against the payload,
// then acknowledges (204) and records it with the turn that sent it (the
// webhook-timestamp: the instant of the turn's claim). It counts each
// registration's requests in flight at once.
func (f *fleet) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := named(f.ledger, f.byPath, w, req)
	if !ok {
		return
	}
	f.mu.Lock()
	f.inFlight[r.key]++
	f.most[r.key] = max(f.most[r.key], f.inFlight[r.key])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight[r.key]--
		f.mu.Unlock()
	}()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return // the sender went away mid-request (killed): nothing acknowledged
	}
	if err := f.verifier[r.key].Verify(body, req.Header); err != nil {
		f.ledger.Problem("%s: the signature does not verify: %v", r.key, err)
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	stream, seq, ok := parseRecordID(req.Header.Get("webhook-id"))
	var p struct {
		Stream string `json:"stream"`
		Seq    uint64 `json:"seq"`
	}
	if !ok || stream != r.stream || json.Unmarshal(body, &p) != nil || p.Stream != stream || p.Seq != seq {
		f.ledger.Problem("%s: webhook-id %q does not match the payload %q", r.key, req.Header.Get("webhook-id"), cutString(string(body), 200))
		http.Error(w, "mismatch", http.StatusBadRequest)
		return
	}
	f.ledger.Attempt(r.key, seq)
	f.ledger.AckTurn(r.key, seq, req.Header.Get(standardwebhooks.HeaderWebhookTimestamp))
	w.WriteHeader(http.StatusNoContent)
}

// heads is what every registration must have acknowledged in the end.
func (f *fleet) heads() map[string]uint64 {
	out := make(map[string]uint64, len(f.regs))
	for _, r := range f.regs {
		out[r.key] = uint64(f.plan.RecordsPerStream)
	}
	return out
}

// expect is what Ledger.Check holds each registration to.
func (f *fleet) expect() map[string]Expect {
	out := make(map[string]Expect, len(f.regs))
	for _, r := range f.regs {
		out[r.key] = Expect{Head: uint64(f.plan.RecordsPerStream), Window: r.window}
	}
	return out
}

// windowFigures sums, per window, what the receivers saw: the most
// requests of one registration in flight at once, the acknowledgements
// that came after a higher seq of their turn, and the re-delivery passes
// with their largest repeat.
func (f *fleet) windowFigures(v Verdict) map[string]any {
	window := map[string]int{}
	for _, r := range f.regs {
		window[r.key] = r.window
	}
	most, passes, worst, reordered := map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}
	f.mu.Lock()
	for key, n := range f.most {
		most[window[key]] = max(most[window[key]], n)
	}
	f.mu.Unlock()
	for key, n := range v.Reordered {
		reordered[window[key]] += n
	}
	for _, r := range v.Restarts {
		passes[window[r.Reg]]++
		worst[window[r.Reg]] = max(worst[window[r.Reg]], r.Redelivered)
	}
	out := map[string]any{}
	for _, w := range slices.Sorted(maps.Keys(most)) {
		out[fmt.Sprintf("w%d", w)] = map[string]int{"in_flight_max": most[w], "reordered": reordered[w],
			"passes": passes[w], "duplicates_per_pass_max": worst[w]}
	}
	return out
}

// workerArgs are the flags of every worker of the fleet: the default sweep
// limit and MaxInFlight (256 each: the trial is of the defaults), and the
// plan's --max-per-host (every receiver is one host), so that windows fill
// and most claims wait for their host's tokens, which the sweep's lease
// budget must keep inside the lease.
func (f *fleet) workerArgs() []string {
	return []string{"-v", "run", "--namespaces", "webhook", "--every", "500ms", "--metrics-addr", "127.0.0.1:0", "--admin-addr", "",
		"--allow-http", "--allow-private-network", "--timeout", "5s",
		"--max-in-flight", strconv.Itoa(push.DefaultMaxInFlight),
		"--max-per-host", strconv.Itoa(cmp.Or(f.plan.MaxPerHost, push.DefaultMaxPerHost)),
		"--lease", f.plan.Lease.String(), "--drain-page", strconv.Itoa(f.plan.DrainPage)}
}

// startWorker starts (or restarts) the worker in slot i.
func (f *fleet) startWorker(i int) { f.start(i, "worker", f.workerArgs()...) }

// start starts (or restarts) herald with args in slot i, as name i, its log
// name-i.log.
func (f *fleet) start(i int, name string, args ...string) {
	for len(f.logs) <= i {
		f.logs = append(f.logs, filepath.Join(f.s.dir, fmt.Sprintf("%s-%d.log", name, len(f.logs))))
		f.workers = append(f.workers, nil)
	}
	f.started++
	f.workers[i] = f.s.cli.start(fmt.Sprintf("%s %d", name, i), f.logs[i], args...)
}

// appendAll appends the plan's rounds to the fleet's streams in the
// background; the channel gets appendRounds' error.
func (f *fleet) appendAll(ctx context.Context) <-chan error {
	appended := make(chan error, 1)
	go func() {
		_, err := f.s.appendRounds(ctx, f.streams, f.plan.RecordsPerStream, f.plan.Rounds)
		appended <- err
	}()
	return appended
}

// killPoints are after how many distinct deliveries each of the plan's
// kills comes, in order, spread over the first 90% of the run.
func (f *fleet) killPoints() []int {
	points := make([]int, f.plan.Kills)
	for i := range points {
		points[i] = 1 + f.s.intN(f.plan.Deliveries()*9/10)
	}
	slices.Sort(points)
	return points
}

// stalled fails the test with what the database and the processes say.
func (f *fleet) stalled(err error) {
	t := f.s.t
	t.Helper()
	var tails strings.Builder
	for _, l := range f.logs {
		fmt.Fprintf(&tails, "--- %s (end)\n%s\n", filepath.Base(l), logTail(l, 3000))
	}
	lag := f.s.cli.run("", "registrations", "--lagging", "--limit", "20")
	hosts := f.s.cli.run("", "hosts")
	t.Fatalf("%v\nlagging:\n%s\nhosts:\n%s\n%s", err, lag.stdout, hosts.stdout, tails.String())
}

// killDrained is killDrained (conns_test.go) for a worker of the fleet, waiting
// at most the plan's Stall for the receiver.
func (f *fleet) killDrained(ctx context.Context, p *proc, stopped func() error) error {
	ctx, cancel := context.WithTimeout(ctx, f.plan.Stall)
	defer cancel()
	return killDrained(ctx, p, f.conns, f.srv.Listener.Addr().String(), stopped)
}

// statuses lists every registration of the fleet, through the store.
func (f *fleet) statuses(ctx context.Context) ([]store.Status, error) {
	var all []store.Status
	q := store.ListQuery{Limit: store.MaxListLimit}
	for {
		page, err := f.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < q.Limit {
			return all, nil
		}
		q.After = page[len(page)-1].Key()
	}
}

// leasedBy returns the registrations whose lease names the process pid
// (lease owners are "host/pid/random#sweep").
func (f *fleet) leasedBy(ctx context.Context, pid int) (map[string]bool, error) {
	sts, err := f.statuses(ctx)
	if err != nil {
		return nil, err
	}
	mark := fmt.Sprintf("/%d/", pid)
	out := map[string]bool{}
	for _, st := range sts {
		if strings.Contains(st.LeaseOwner, mark) {
			out[st.Stream+" "+st.ID] = true
		}
	}
	return out, nil
}

// cursors returns every registration's cursor.
func (f *fleet) cursors(ctx context.Context) (map[string]uint64, error) {
	sts, err := f.statuses(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(sts))
	for _, st := range sts {
		out[st.Stream+" "+st.ID] = st.NextSeq
	}
	return out, nil
}

// stopAll sends SIGTERM to every worker and checks each exits 0 having
// said so in its log. It waits until a worker runs (it logged so) before
// it stops it: the one the last kill restarted may still be starting on a
// loaded machine, and a SIGTERM then (before the Go runtime installed the
// handler, or while the database is being opened) is a start cut short,
// not the shutdown checked here.
func (f *fleet) stopAll() {
	t := f.s.t
	for i, w := range f.workers {
		if _, err := w.out.waitLine(context.Background(), time.Minute, "herald: running"); err != nil {
			t.Errorf("worker %d did not start: %v; log:\n%s", i, err, logTail(f.logs[i], 3000))
		}
		code, err := w.stop(time.Minute)
		if err != nil {
			t.Error(err)
			continue
		}
		if code != 0 {
			t.Errorf("worker %d exited %d on SIGTERM (want 0); log:\n%s", i, code, logTail(f.logs[i], 3000))
		}
		if w.out.count("stopped; every cursor is saved") == 0 {
			t.Errorf("worker %d did not log that it stopped with every cursor saved; log:\n%s", i, logTail(f.logs[i], 3000))
		}
	}
}

// settle brings every cursor to the head once the workers are stopped:
// registrations whose lease a killed worker still held are due once the
// lease expires, so it sweeps at an instant past every lease, as a
// scheduler would, until nothing lags (at most one sweep per drain page).
// It returns the sweeps it took.
func (f *fleet) settle() int {
	t := f.s.t
	limit := (f.plan.RecordsPerStream+f.plan.DrainPage-1)/f.plan.DrainPage + 2
	for n := 0; ; n++ {
		var lagging []json.RawMessage
		f.s.cli.json(&lagging, "registrations", "--lagging", "--limit", "100000")
		if len(lagging) == 0 {
			return n
		}
		if n == limit {
			t.Fatalf("%d registrations still lag after %d sweeps; first: %s", len(lagging), n, lagging[0])
		}
		at := time.Now().Add(f.plan.Lease + time.Second).UTC().Format(time.RFC3339Nano)
		r := f.s.cli.run("", "sweep", "--namespace", "webhook", "--at", at, "--limit", "100000", "--json",
			"--allow-http", "--allow-private-network", "--drain-page", strconv.Itoa(f.plan.DrainPage), "--lease", f.plan.Lease.String())
		if r.code != 0 {
			t.Fatalf("a settling sweep must exit 0 (nothing parked, nothing failed):\n%s", r)
		}
	}
}

// checkFinal checks the database's final state through the CLI: every
// registration idle at its head, none parked, every cursor at what its
// receiver acknowledged.
func (f *fleet) checkFinal() {
	t := f.s.t
	var views []struct {
		Stream  string `json:"stream"`
		ID      string `json:"id"`
		NextSeq uint64 `json:"next_seq"`
		Head    uint64 `json:"head"`
		State   string `json:"state"`
		Parked  bool   `json:"parked"`
	}
	f.s.cli.json(&views, "registrations", "--limit", "100000")
	heads := f.heads()
	cursors := map[string]uint64{}
	bad := 0
	for _, v := range views {
		if _, ours := heads[v.Stream+" "+v.ID]; !ours {
			continue // another part of the scenario's
		}
		cursors[v.Stream+" "+v.ID] = v.NextSeq
		if v.Parked || v.State != store.StateIdle || v.Head != uint64(f.plan.RecordsPerStream) || v.NextSeq != v.Head+1 {
			if bad++; bad <= 5 {
				t.Errorf("%s/%s: state %s, cursor %d, head %d (want idle at %d)", v.Stream, v.ID, v.State, v.NextSeq, v.Head, f.plan.RecordsPerStream+1)
			}
		}
	}
	if len(cursors) != len(f.regs) {
		t.Errorf("herald lists %d of the fleet's registrations, the fleet made %d", len(cursors), len(f.regs))
	}
	for _, p := range f.ledger.CheckCursors(cursors) {
		t.Error(p)
	}
}

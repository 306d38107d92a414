package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/logtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// t0 is the tests' epoch; instants are t0 plus stated offsets.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

const ns = "webhook"

// projection is a function-field fake: by default one message per record,
// id = record id, body = payload, terminal = rec.Final.
type projection struct {
	messages func(rec journal.Record, reg push.Registration) ([]push.Message, error)
	terminal func(rec journal.Record) bool
}

func (p projection) Namespace() string { return ns }

func (p projection) Messages(_ context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	if p.messages != nil {
		return p.messages(rec, reg)
	}
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Body: rec.Payload}}, nil
}

func (p projection) Terminal(rec journal.Record) bool {
	if p.terminal != nil {
		return p.terminal(rec)
	}
	return rec.Final
}

// sent is one delivery attempt as a fake receiver saw it.
type sent struct {
	Reg   string
	MsgID string
	At    time.Time
}

// receiver records attempts and answers with the outcome its answer
// function chooses (Accepted by default). Safe for concurrent use.
type receiver struct {
	mu     sync.Mutex
	got    []sent
	answer func(reg push.Registration, msg push.Message, n int) push.Outcome // n: 1-based attempt count of this message id
	tries  map[string]int
}

func (r *receiver) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return push.Outcome{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tries == nil {
		r.tries = map[string]int{}
	}
	key := reg.Stream + "/" + reg.ID + "/" + msg.ID
	r.tries[key]++
	r.got = append(r.got, sent{Reg: reg.Stream + "/" + reg.ID, MsgID: msg.ID, At: at})
	if r.answer != nil {
		return r.answer(reg, msg, r.tries[key]), nil
	}
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

func (r *receiver) sent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.got...)
}

func (r *receiver) ids(reg string) []string {
	var out []string
	for _, s := range r.sent() {
		if s.Reg == reg {
			out = append(out, s.MsgID)
		}
	}
	return out
}

func accepted() push.Outcome { return push.Outcome{Verdict: push.Accepted, Status: 200} }
func unavailable() push.Outcome {
	return push.Outcome{Verdict: push.Transient, Status: 503, Reason: "503 Service Unavailable"}
}

type fixture struct {
	t     testing.TB
	store *memory.Store
	recv  *receiver
	proj  projection
	logs  *logtest.Buffer
}

func newFixture(t testing.TB) *fixture {
	return &fixture{t: t, store: memory.New(memory.WithClock(func() time.Time { return t0 })), recv: &receiver{}, logs: &logtest.Buffer{}}
}

func (f *fixture) worker(opts ...push.Option) *push.Worker {
	f.t.Helper()
	return f.workerOn(f.recv, opts...)
}

// workerOn is a worker of f's store and projection that sends through tr.
func (f *fixture) workerOn(tr push.Transport, opts ...push.Option) *push.Worker {
	f.t.Helper()
	return f.build(f.store, f.store, tr, f.proj, opts...)
}

// build is push.NewWorker's worker of j, s, tr and p, checked, logging to
// f.logs and owner w1 unless opts say otherwise.
func (f *fixture) build(j journal.Journal, s store.Store, tr push.Transport, p push.Projection, opts ...push.Option) *push.Worker {
	f.t.Helper()
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := push.NewWorker(j, s, tr, p, append([]push.Option{push.WithLogger(logger), push.WithOwner("w1")}, opts...)...)
	require.NoError(f.t, err)
	return w
}

// serve is a receiver on 127.0.0.1 answering with h (serveOn).
func serve(t testing.TB, h http.HandlerFunc) *httptest.Server { return serveOn(t, "127.0.0.1", h) }

// recordN reads the n of a request's body, fixture.append's payload
// ({"n":…}), answering 400 to any other body.
func recordN(w http.ResponseWriter, r *http.Request) (int, bool) {
	body, _ := io.ReadAll(r.Body)
	var rec struct{ N int }
	if err := json.Unmarshal(body, &rec); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return 0, false
	}
	return rec.N, true
}

// loopback is the real HTTP transport, allowed onto loopback; timeout 0 is
// the transport's default.
func loopback(t testing.TB, timeout time.Duration) push.Transport {
	t.Helper()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: timeout})
	require.NoError(t, err)
	return tr
}

func (f *fixture) append(stream string, n int) []journal.Record {
	f.t.Helper()
	head, err := f.store.Head(f.t.Context(), stream)
	require.NoError(f.t, err)
	es := make([]journal.Entry, n)
	for i := range es {
		id := fmt.Sprintf("%s#%d", stream, int(head)+i+1)
		es[i] = journal.Entry{ID: id, Kind: "test.event", Payload: []byte(fmt.Sprintf(`{"n":%d}`, int(head)+i+1))}
	}
	recs, err := f.store.Append(f.t.Context(), stream, es...)
	require.NoError(f.t, err)
	return recs
}

func (f *fixture) register(stream, id string) {
	f.t.Helper()
	f.registered(push.Registration{Stream: stream, ID: id, URL: "https://receiver.example/hooks/" + id + "?token=capability-in-url",
		Config: push.Config(`{"secret":"whsec_s3cr3t"}`)})
}

// registerURL registers stream/id at url.
func (f *fixture) registerURL(stream, id, url string) {
	f.t.Helper()
	f.registered(push.Registration{Stream: stream, ID: id, URL: url})
}

// registered stores r, in the test namespace unless it names another.
func (f *fixture) registered(r push.Registration) {
	f.t.Helper()
	if r.Namespace == "" {
		r.Namespace = ns
	}
	_, err := f.store.Register(f.t.Context(), r)
	require.NoError(f.t, err)
}

func (f *fixture) get(stream, id string) store.Status {
	f.t.Helper()
	st, err := f.store.Get(f.t.Context(), stream, id)
	require.NoError(f.t, err)
	return st
}

func (f *fixture) sweep(w *push.Worker, when time.Time) push.SweepReport {
	f.t.Helper()
	rep, err := w.RunOnce(f.t.Context(), when, 100)
	require.NoError(f.t, err)
	return rep
}

func (f *fixture) evidence(stream, id string) []store.Evidence {
	f.t.Helper()
	evs, err := f.store.Evidence(f.t.Context(), stream, id, 0)
	require.NoError(f.t, err)
	return evs
}

func seqIDs(stream string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s#%d", stream, i))
	}
	return out
}

// receive waits for one value of ch.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no signal within %v", waitFor)
		panic("unreachable")
	}
}

// renewals is a store that tells each renewal it served: Renew's on
// claims, RenewResends' on resends.
type renewals struct {
	*memory.Store
	claims  chan []store.Claim
	resends chan []store.ResendClaim
}

func newRenewals(s *memory.Store) renewals {
	return renewals{Store: s, claims: make(chan []store.Claim, 100), resends: make(chan []store.ResendClaim, 100)}
}

func (s renewals) Renew(ctx context.Context, until time.Time, claims []store.Claim) ([]store.Claim, error) {
	got, err := s.Store.Renew(ctx, until, claims)
	s.claims <- got
	return got, err
}

func (s renewals) RenewResends(ctx context.Context, until time.Time, cs []store.ResendClaim) ([]store.ResendClaim, error) {
	got, err := s.Store.RenewResends(ctx, until, cs)
	s.resends <- got
	return got, err
}

// waitFor is how long a test waits for a signal before it fails: a guard
// against a hang, never a synchronisation.
const waitFor = 10 * time.Second

// serveOn serves h on ip (127.0.0.2 is another host than 127.0.0.1 on
// Linux), on a free port.
func serveOn(t testing.TB, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("cannot listen on %s, another loopback host (on Linux all of 127.0.0.0/8 is loopback): %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// daemon is a worker's Run on a goroutine of its own (runDaemon) until stop.
type daemon struct {
	cancel  context.CancelFunc
	stopped chan error
}

// runDaemon starts w.Run with an interval far beyond any test: whatever
// happens, happens on wakes and turn ends.
func runDaemon(t *testing.T, w *push.Worker) *daemon {
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{cancel: cancel, stopped: make(chan error, 1)}
	go func() { d.stopped <- w.Run(ctx, time.Hour) }()
	return d
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.stopped:
		require.NoError(t, err, "Run returns nil when its context ends")
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its context ended")
	}
}

// gate holds one delivery until the test releases it.
type gate struct {
	entered, release chan struct{}
	once             sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) wait() {
	g.once.Do(func() { close(g.entered) })
	<-g.release
}

// transport answers out to every message, holding at g those with id only
// (every one if only is "").
func (g *gate) transport(only string, out push.Outcome) push.Transport {
	return push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if only == "" || msg.ID == only {
			g.wait()
		}
		return out, nil
	})
}

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// The worker flags of the faulty receivers scenario: short enough that the
// retry ceiling is reached in seconds.
const (
	faultTimeout       = time.Second
	faultMaxAttempts   = 4
	faultMaxRetryAfter = 2 * time.Second
)

// answer writes one answer of a faulty receiver and reports whether it
// acknowledged the request (a 2xx status line was sent).
type answer func(w http.ResponseWriter, r *http.Request) bool

// profile is one kind of receiver: how it answers the attempt-th request
// (1-based) for seq, and what must become of its registration.
type profile struct {
	name      string
	namespace string // webhook (default) or cloudevents
	onReject  push.RejectPolicy
	answer    func(f *faults, seq uint64, attempt int) answer
	// What must become of it: parked at parkAt after parkAttempts
	// requests for it, with evidence naming why; or, held, stuck at parkAt
	// after at least parkAttempts requests, never parked and never charged
	// an attempt (a host-level failure: README, "Hosts"), with host-failed
	// evidence naming why; or (parkAt 0) every record acknowledged but
	// skip, each exactly once.
	parkAt       uint64
	parkAttempts int
	held         bool
	status       int      // the parking evidence's status (0: none came back)
	words        []string // in the parking evidence's error (regular expressions)
	location     string   // in the parking evidence's location
	skip         uint64   // a seq the receiver refuses with a 4xx and herald skips
	failsBefore  bool     // evidence of failed attempts is expected though it ends delivered
}

// faults is the faulty receivers' world.
type faults struct {
	s       *scenario
	ledger  *Ledger
	trap    *httptest.Server // a loopback server no redirect may reach
	trapped atomic.Int64     // connections the trap accepted
	regs    map[string]*faultReg
	tokens  map[string]string // cloudevents registration → bearer token
}

type faultReg struct {
	profile *profile
	key     string
	stream  string
	id      string
	path    string
	verify  *standardwebhooks.Webhook
	token   string
}

func ok204(w http.ResponseWriter, _ *http.Request) bool {
	w.WriteHeader(http.StatusNoContent)
	return true
}

func status(code int, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) bool {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		http.Error(w, fmt.Sprintf("chaos says %d", code), code)
		return code >= 200 && code <= 299
	}
}

// hang answers nothing until the sender gives up (its --timeout).
func hang(_ http.ResponseWriter, r *http.Request) bool {
	<-r.Context().Done()
	return false
}

// reset closes the connection with a TCP RST, before any answer.
func reset(w http.ResponseWriter, _ *http.Request) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return false
}

// slowBody sends the status line at once, then a byte every 100 ms until
// 300 ms past the sender's timeout.
func slowBody(code int) answer {
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(code)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < int((faultTimeout+300*time.Millisecond)/(100*time.Millisecond)); i++ {
			select {
			case <-tick.C:
				_, _ = w.Write([]byte("."))
				_ = rc.Flush()
			case <-r.Context().Done():
				return code >= 200 && code <= 299
			}
		}
		return code >= 200 && code <= 299
	}
}

// bigBody answers code with a 10 MB body.
func bigBody(code int) answer {
	chunk := []byte(strings.Repeat("0123456789abcdef", 4096)) // 64 KiB
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(160*len(chunk)))
		w.WriteHeader(code)
		for i := 0; i < 160 && r.Context().Err() == nil; i++ {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		return code >= 200 && code <= 299
	}
}

// echoHeaders answers 500 with every request header in the body, as a
// debugging receiver might: the evidence must not keep the secrets in it.
func echoHeaders(w http.ResponseWriter, r *http.Request) bool {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Header {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	http.Error(w, b.String(), http.StatusInternalServerError)
	return false
}

func redirect(code int, location string) answer {
	return func(w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("Location", location)
		w.WriteHeader(code)
		return false
	}
}

// firstAttemptAt fails the first attempt at each of seqs with fail, and
// acknowledges everything else.
func firstAttemptAt(fail answer, seqs ...uint64) func(*faults, uint64, int) answer {
	return func(_ *faults, seq uint64, attempt int) answer {
		if attempt == 1 && slices.Contains(seqs, seq) {
			return fail
		}
		return ok204
	}
}

// alwaysAt fails every attempt at seq with fail.
func alwaysAt(fail answer, at uint64) func(*faults, uint64, int) answer {
	return func(_ *faults, seq uint64, _ int) answer {
		if seq == at {
			return fail
		}
		return ok204
	}
}

func (f *faults) profiles() []*profile {
	metadata := "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
	trap := f.trap.URL + "/steal?from=herald"
	ceiling := fmt.Sprintf(`attempt %d of %d: retry ceiling reached`, faultMaxAttempts, faultMaxAttempts)
	return []*profile{
		{name: "ok", answer: func(*faults, uint64, int) answer { return ok204 }},
		{name: "ok-200-with-body", answer: func(*faults, uint64, int) answer { return status(200) }},
		{name: "500-once", answer: firstAttemptAt(status(500), 1, 3), failsBefore: true},
		{name: "503-retry-after-seconds", answer: firstAttemptAt(status(503, "Retry-After", "1"), 2), failsBefore: true},
		{name: "429-retry-after-date", failsBefore: true, answer: func(_ *faults, seq uint64, attempt int) answer {
			if seq == 2 && attempt == 1 {
				return status(429, "Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			}
			return ok204
		}},
		{name: "503-retry-after-a-day", answer: firstAttemptAt(status(503, "Retry-After", "86400"), 1), failsBefore: true},
		{name: "429-retry-after-garbage", answer: firstAttemptAt(status(429, "Retry-After", "soon, maybe"), 2), failsBefore: true},
		{name: "mixed", answer: (*faults).mixed, failsBefore: true},
		{name: "timeout-once", answer: firstAttemptAt(hang, 1), failsBefore: true},
		{name: "reset-once", answer: firstAttemptAt(reset, 2), failsBefore: true},
		{name: "slow-body-200", answer: func(*faults, uint64, int) answer { return slowBody(200) }},
		{name: "slow-body-500-once", answer: firstAttemptAt(slowBody(500), 1), failsBefore: true},
		{name: "10MB-body-200", answer: func(*faults, uint64, int) answer { return bigBody(200) }},
		{name: "10MB-body-500-once", answer: firstAttemptAt(bigBody(500), 2), failsBefore: true},
		{name: "redirect-once", answer: firstAttemptAt(redirect(302, metadata), 2), failsBefore: true},
		{name: "echo-headers-once", namespace: cloudevents.Namespace, answer: firstAttemptAt(echoHeaders, 1), failsBefore: true},
		{name: "cloudevents-ok", namespace: cloudevents.Namespace, answer: func(*faults, uint64, int) answer { return ok204 }},
		{name: "422-skipped", onReject: push.RejectSkip, answer: alwaysAt(status(422), 2), skip: 2},

		{name: "410-gone", answer: alwaysAt(status(410), 2), parkAt: 2, parkAttempts: 1, status: 410, words: []string{`410 Gone`}},
		{name: "500-always", answer: alwaysAt(status(500), 3), parkAt: 3, parkAttempts: faultMaxAttempts, status: 500,
			words: []string{`500 Internal Server Error`, ceiling}},
		{name: "400-retried-until-parked", answer: alwaysAt(status(400), 1), parkAt: 1, parkAttempts: faultMaxAttempts, status: 400,
			words: []string{`400 Bad Request`, ceiling}},
		{name: "timeout-always", answer: alwaysAt(hang, 2), parkAt: 2, parkAttempts: faultMaxAttempts, held: true,
			words: []string{`timeout`}},
		{name: "reset-always", answer: alwaysAt(reset, 1), parkAt: 1, parkAttempts: faultMaxAttempts, held: true,
			words: []string{`reset|closed by the receiver`}},
		{name: "10MB-body-503-always", answer: alwaysAt(bigBody(503), 1), parkAt: 1, parkAttempts: faultMaxAttempts, status: 503, held: true,
			words: []string{`503 Service Unavailable`}},
		{name: "redirect-to-metadata", answer: alwaysAt(redirect(302, metadata), 1), parkAt: 1, parkAttempts: faultMaxAttempts, status: 302,
			words: []string{`redirect not followed \(to 169\.254\.169\.254\)`, ceiling}, location: "169.254.169.254"},
		{name: "redirect-to-rfc1918", answer: alwaysAt(redirect(307, "http://10.0.0.7:8080/internal/admin"), 2), parkAt: 2,
			parkAttempts: faultMaxAttempts, status: 307, words: []string{`redirect not followed \(to 10\.0\.0\.7:8080\)`, ceiling}, location: "10.0.0.7"},
		{name: "redirect-to-loopback-trap", answer: alwaysAt(redirect(308, trap), 1), parkAt: 1, parkAttempts: faultMaxAttempts, status: 308,
			words: []string{`redirect not followed`, ceiling}, location: strings.TrimPrefix(f.trap.URL, "http://")},
	}
}

// mixed draws the answer to each of the first two attempts at a record
// from the seeded randomness: half the time a transient fault of any kind,
// otherwise 204; the third attempt is always acknowledged.
func (f *faults) mixed(_ uint64, attempt int) answer {
	if attempt > 2 || f.s.intN(2) == 0 {
		return ok204
	}
	pool := []answer{
		status(500), status(502), status(503, "Retry-After", "1"),
		status(429, "Retry-After", time.Now().Add(time.Second).UTC().Format(http.TimeFormat)),
		hang, reset, slowBody(503), bigBody(500), redirect(301, "http://169.254.169.254/"),
	}
	return pool[f.s.intN(len(pool))]
}

// named is the registration of regs that req's path names; for a path no
// registration names, a receiver's request is a problem of l, answered 404.
func named[R any](l *Ledger, regs map[string]R, w http.ResponseWriter, req *http.Request) (R, bool) {
	r, ok := regs[req.URL.Path]
	if !ok {
		l.Problem("a request for %q, which no registration names", req.URL.Path)
		http.Error(w, "unknown", http.StatusNotFound)
	}
	return r, ok
}

func (f *faults) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	reg, ok := named(f.ledger, f.regs, w, req)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return
	}
	id := req.Header.Get("webhook-id")
	if reg.token != "" {
		id = req.Header.Get("ce-id")
		if req.Header.Get("Authorization") != "Bearer "+reg.token {
			f.ledger.Problem("%s: no or a wrong bearer token", reg.key)
		}
	} else if err := reg.verify.Verify(body, req.Header); err != nil {
		f.ledger.Problem("%s: the signature does not verify: %v", reg.key, err)
	}
	stream, seq, ok := parseRecordID(id)
	if !ok || stream != reg.stream {
		f.ledger.Problem("%s: message id %q is not one of its stream's records", reg.key, id)
		http.Error(w, "mismatch", http.StatusBadRequest)
		return
	}
	f.ledger.Attempt(reg.key, seq)
	attempt := f.ledger.Attempts(reg.key, seq)
	if reg.profile.answer(f, seq, attempt)(w, req) {
		f.ledger.Ack(reg.key, seq)
	}
}

// done reports whether every receiver reached its end: parked ones got
// their last attempt, the others acknowledged every record.
func (f *faults) done(l *Ledger, records uint64) bool {
	for _, reg := range f.regs {
		p := reg.profile
		r := l.regs[reg.key]
		switch {
		case r == nil:
			return false
		case p.parkAt > 0:
			if r.attempts[p.parkAt] < p.parkAttempts {
				return false
			}
		default:
			for s := uint64(1); s <= records; s++ {
				if s != p.skip && (uint64(len(r.seen)) <= s || !r.seen[s]) {
					return false
				}
			}
			if p.skip > 0 && r.attempts[p.skip] == 0 {
				return false
			}
		}
	}
	return true
}

// TestChaosFaultyReceivers: one `herald run` daemon serves receivers that
// answer every way a receiver can fail. Afterwards every record was
// delivered (exactly once: no crash here) or its registration is parked
// with evidence that says why, or held for its host (a host-level failure:
// retried on its backoff, never parked, with evidence that says why), or a
// refused message was skipped with evidence, as its policy says; nothing
// else: no registration stuck without explanation. No redirect is ever followed (a
// loopback trap the guard would allow stays untouched), no secret is in
// the evidence, the logs or the admin API's answers.
func TestChaosFaultyReceivers(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDatabase(t)
	s := newScenario(t, db)
	plan := s.mode.Faults
	f := &faults{s: s, ledger: NewLedger(), regs: map[string]*faultReg{}}
	f.trap = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "you followed a redirect", http.StatusTeapot)
	}))
	f.trap.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			f.trapped.Add(1)
		}
	}
	f.trap.Start()
	t.Cleanup(f.trap.Close)
	// Each profile answers on a host of its own (a port of 127.0.0.1: a
	// host is host:port), as receivers of different owners would: host
	// health is per host, so one profile's timeouts never hold another's
	// registrations.
	hostOf := map[string]string{}
	serveHost := func(name string) string {
		if u, ok := hostOf[name]; ok {
			return u
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		t.Cleanup(func() { _ = hs.Close() })
		hostOf[name] = "http://" + ln.Addr().String()
		return hostOf[name]
	}

	s.cli.ok("migrate", "up")
	st, err := postgres.Open(ctx, db, postgres.WithKeyring(s.keyring))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	adminToken := s.token("admin-")
	s.cli.env = append(s.cli.env, "HERALD_ADMIN_TOKEN="+adminToken)

	profiles := f.profiles()
	var streams []string
	for _, p := range profiles {
		for i := 0; i < plan.PerProfile; i++ {
			reg := &faultReg{profile: p, stream: fmt.Sprintf("faults/%s/%d", p.name, i), id: "receiver", path: fmt.Sprintf("/f/%s/%d", p.name, i)}
			reg.key = reg.stream + " " + reg.id
			r := push.Registration{Stream: reg.stream, ID: reg.id, URL: serveHost(p.name) + reg.path, Namespace: webhook.Namespace, OnRejected: p.onReject}
			if p.namespace == cloudevents.Namespace {
				reg.token = s.token("ce-token-")
				r.Namespace = cloudevents.Namespace
				r.Config, err = json.Marshal(cloudevents.Config{Source: "https://chaos.example/faults", Token: reg.token})
			} else {
				secret := s.webhookSecret()
				reg.verify, err = standardwebhooks.NewWebhook(secret)
				if err == nil {
					r.Config, err = webhook.Config{Secrets: []string{secret}}.Encode()
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Register(ctx, r); err != nil {
				t.Fatal(err)
			}
			f.regs[reg.path] = reg
			streams = append(streams, reg.stream)
		}
	}
	t.Logf("%d receiver profiles × %d, %d records each; --timeout %v --max-attempts %d --max-retry-after %v",
		len(profiles), plan.PerProfile, plan.Records, faultTimeout, faultMaxAttempts, faultMaxRetryAfter)

	logPath := filepath.Join(s.dir, "daemon.log")
	daemon := s.cli.start("daemon", logPath, "-v", "run", "--namespaces", "webhook,cloudevents", "--every", "200ms",
		"--metrics-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--allow-http", "--allow-private-network",
		"--timeout", faultTimeout.String(), "--max-attempts", strconv.Itoa(faultMaxAttempts), "--retry-schedule", "1s,2s",
		"--max-retry-after", faultMaxRetryAfter.String(), "--lease", "30s")
	running, err := daemon.out.waitLine(ctx, time.Minute, "herald: running")
	if err != nil {
		t.Fatalf("%v; log:\n%s", err, logTail(logPath, 3000))
	}
	if _, err := s.appendRounds(ctx, streams, plan.Records, 1); err != nil {
		t.Fatal(err)
	}
	records := uint64(plan.Records)
	if err := f.ledger.Wait(ctx, time.Minute, "every receiver to reach its end", func(l *Ledger) bool { return f.done(l, records) }); err != nil {
		t.Fatalf("%v\n%s\nlog:\n%s", err, s.cli.run("", "registrations", "--lagging").stdout, logTail(logPath, 4000))
	}
	f.checkAdminAPI(ctx, running, adminToken)
	code, err := daemon.stop(time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("the daemon on SIGTERM: exit %d, %v; log:\n%s", code, err, logTail(logPath, 3000))
	}

	// herald's view, through the CLI, against each profile's end.
	var views []struct {
		Stream, ID, State string
		NextSeq           uint64 `json:"next_seq"`
		Attempts          int
		Parked            bool
	}
	s.cli.json(&views, "registrations", "--limit", "10000")
	if len(views) != len(f.regs) {
		t.Fatalf("herald lists %d registrations, the scenario made %d", len(views), len(f.regs))
	}
	byKey := map[string]*faultReg{}
	for _, reg := range f.regs {
		byKey[reg.key] = reg
	}
	parked, failedRows := 0, 0
	for _, v := range views {
		reg := byKey[v.Stream+" "+v.ID]
		p := reg.profile
		var evs []store.Evidence
		s.cli.json(&evs, "evidence", "--stream", v.Stream, "--id", v.ID, "--limit", strconv.Itoa(store.MaxEvidence))
		for _, ev := range evs {
			if len(ev.Body) > store.MaxEvidenceBody {
				t.Errorf("%s: evidence keeps %d bytes of a body, more than %d", p.name, len(ev.Body), store.MaxEvidenceBody)
			}
			if ev.Event == store.EventFailed {
				failedRows++
			}
		}
		acks := f.ledger.Acks(reg.key)
		if len(evs) > 0 {
			t.Logf("%-26s %-6s cursor %d, %d evidence rows, newest: %s #%d attempt %d status %d %q location %q body %q",
				p.name, v.State, v.NextSeq, len(evs), evs[0].Event, evs[0].Seq, evs[0].Attempt, evs[0].Status, evs[0].Error, evs[0].Location, cutString(evs[0].Body, 80))
		} else {
			t.Logf("%-26s %-6s cursor %d, no evidence", p.name, v.State, v.NextSeq)
		}
		switch {
		case p.held:
			if v.Parked || v.NextSeq != p.parkAt || v.Attempts != 0 {
				t.Errorf("%s: state %s at cursor %d, %d attempts; want held at %d, never parked, no attempt charged", p.name, v.State, v.NextSeq, v.Attempts, p.parkAt)
				continue
			}
			if len(evs) == 0 || evs[0].Event != store.EventHostFailed || evs[0].Seq != p.parkAt || evs[0].Attempt != 0 || evs[0].Status != p.status {
				t.Errorf("%s: want host-failed evidence at #%d (attempt 0, status %d), got %+v", p.name, p.parkAt, p.status, evs)
				continue
			}
			for _, w := range p.words {
				if !regexp.MustCompile(w).MatchString(evs[0].Error) {
					t.Errorf("%s: the evidence %q does not say %q", p.name, evs[0].Error, w)
				}
			}
			if want := seqRange(1, p.parkAt-1); !slices.Equal(acks, want) {
				t.Errorf("%s: the receiver acknowledged %v, want %v", p.name, acks, want)
			}
			if n := daemon.out.count("registration parked", "stream="+v.Stream); n != 0 {
				t.Errorf("%s: the daemon logged its parking %d times: a host-level failure never parks", p.name, n)
			}
		case p.parkAt > 0:
			parked++
			if !v.Parked || v.NextSeq != p.parkAt {
				t.Errorf("%s: state %s at cursor %d, want parked at %d", p.name, v.State, v.NextSeq, p.parkAt)
				continue
			}
			if len(evs) == 0 || evs[0].Event != store.EventParked {
				t.Errorf("%s: parked without parking evidence: %+v", p.name, evs)
				continue
			}
			ev := evs[0]
			if ev.Seq != p.parkAt || ev.Attempt != p.parkAttempts || ev.Status != p.status {
				t.Errorf("%s: parking evidence at #%d attempt %d status %d, want #%d attempt %d status %d", p.name, ev.Seq, ev.Attempt, ev.Status, p.parkAt, p.parkAttempts, p.status)
			}
			for _, w := range p.words {
				if !regexp.MustCompile(w).MatchString(ev.Error) {
					t.Errorf("%s: the parking evidence %q does not say %q", p.name, ev.Error, w)
				}
			}
			if !strings.Contains(ev.Location, p.location) {
				t.Errorf("%s: the parking evidence's location %q does not name %q", p.name, ev.Location, p.location)
			}
			if want := seqRange(1, p.parkAt-1); !slices.Equal(acks, want) {
				t.Errorf("%s: the receiver acknowledged %v, want %v", p.name, acks, want)
			}
			if n := daemon.out.count("registration parked", "stream="+v.Stream); n != 1 {
				t.Errorf("%s: the daemon logged its parking %d times, want once", p.name, n)
			}
		default:
			if v.Parked || v.State != store.StateIdle || v.NextSeq != records+1 {
				t.Errorf("%s: state %s at cursor %d, want idle at %d; evidence: %+v", p.name, v.State, v.NextSeq, records+1, evs)
			}
			var want []uint64
			for s := uint64(1); s <= records; s++ {
				if s != p.skip {
					want = append(want, s)
				}
			}
			// Each record once, in order; again only right after an
			// attempt herald saw fail (a 2xx that came after its timeout
			// on a loaded machine): at least once, never out of order.
			failed := 0
			for _, ev := range evs {
				if ev.Event == store.EventFailed || ev.Event == store.EventHostFailed {
					failed++
				}
			}
			if got := slices.Compact(slices.Clone(acks)); !slices.Equal(got, want) || len(acks)-len(got) > failed {
				t.Errorf("%s: the receiver acknowledged %v, want each of %v once, in order (again at most after each of the %d failed attempts)", p.name, acks, want, failed)
			}
			if p.skip > 0 && !slices.ContainsFunc(evs, func(ev store.Evidence) bool {
				return ev.Event == store.EventSkipped && ev.Seq == p.skip && ev.Status == 422
			}) {
				t.Errorf("%s: no evidence that #%d was skipped after a 422: %+v", p.name, p.skip, evs)
			}
			if p.failsBefore && p.name != "mixed" && !slices.ContainsFunc(evs, func(ev store.Evidence) bool {
				return ev.Event == store.EventFailed || ev.Event == store.EventHostFailed
			}) {
				t.Errorf("%s: failed first and was retried, yet there is no evidence of a failed attempt", p.name)
			}
		}
	}
	if pr := f.ledger.Problems(); len(pr) > 0 {
		t.Errorf("the receivers found problems:\n%s", strings.Join(pr, "\n"))
	}
	if n := f.trapped.Load(); n != 0 {
		t.Errorf("the loopback trap a redirect pointed at accepted %d connections: a redirect was followed", n)
	}
	s.checkSecrets()
	_, _, requests := f.ledger.Counts()
	s.report(map[string]any{"profiles": len(profiles), "registrations": len(f.regs), "records_per_registration": plan.Records,
		"requests": requests, "parked": parked, "failed_attempt_evidence": failedRows})
}

// checkAdminAPI asks the daemon's admin API for the parked registrations
// with the token (their answers go into the transcript searched for
// secrets) and checks it refuses a request without it.
func (f *faults) checkAdminAPI(ctx context.Context, running, token string) {
	t := f.s.t
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(running)
	if m == nil {
		t.Fatalf("the daemon's running line names no admin address: %s", running)
	}
	get := func(path string, auth bool) (int, []byte) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m[1]+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		f.s.cli.tr.add("admin API GET "+path, b)
		return resp.StatusCode, b
	}
	if code, _ := get("/v1/registrations?parked=true", false); code != http.StatusUnauthorized {
		t.Errorf("the admin API without a token answered %d, want 401", code)
	}
	code, body := get("/v1/registrations?parked=true&limit=1000", true)
	var parked []json.RawMessage
	if code != http.StatusOK || json.Unmarshal(body, &parked) != nil || len(parked) == 0 {
		t.Errorf("the admin API's parked registrations: %d %s", code, cutString(string(body), 500))
	}
	for _, reg := range f.regs {
		if reg.profile.parkAt > 0 || reg.profile.failsBefore {
			get(fmt.Sprintf("/v1/evidence?stream=%s&id=%s&limit=%d", reg.stream, reg.id, store.MaxEvidence), true)
		}
	}
}

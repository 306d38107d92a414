package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// schemeSigner signs by naming the scheme in a header: what a receiver
// checks below.
type schemeSigner []string

func (s schemeSigner) Schemes() []string { return s }
func (s schemeSigner) Sign(req *http.Request, body []byte, at time.Time) error {
	return s.SignScheme(req, body, at, s[0])
}
func (s schemeSigner) SignScheme(req *http.Request, _ []byte, _ time.Time, scheme string) error {
	req.Header.Set("X-Scheme", scheme)
	return nil
}

// schemeInbox takes the schemes in accepts and answers the others with
// refusal and its body; seen lists the schemes of the requests, in order.
type schemeInbox struct {
	*httptest.Server
	mu      sync.Mutex
	accepts []string
	refusal int
	body    string
	got     []string
}

func newSchemeInbox(t *testing.T, refusal int, body string, accepts ...string) *schemeInbox {
	in := &schemeInbox{accepts: accepts, refusal: refusal, body: body}
	in.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.mu.Lock()
		defer in.mu.Unlock()
		scheme := r.Header.Get("X-Scheme")
		in.got = append(in.got, scheme)
		if !slices.Contains(in.accepts, scheme) {
			http.Error(w, in.body, in.refusal)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(in.Close)
	return in
}

// seen returns and forgets the schemes of the requests so far.
func (in *schemeInbox) seen() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	got := in.got
	in.got = nil
	return got
}

func (in *schemeInbox) accept(schemes ...string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.accepts = schemes
}

func signed(g schemeSigner) push.Message {
	msg := message(`{"type":"Create"}`)
	msg.Signer = g
	return msg
}

func deliverAt(t *testing.T, tr push.Transport, url string, msg push.Message, when time.Time) push.Outcome {
	t.Helper()
	out, err := tr.Deliver(context.Background(), registration(url), msg, when)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestARefusedSchemeIsKnockedPastOnceAndRemembered: a host refusing the
// first scheme gets the second at once, within one Deliver (so one outcome,
// nothing charged); its scheme goes to the store, so that neither this
// transport nor another over the same store knocks there again.
func TestARefusedSchemeIsKnockedPastOnceAndRemembered(t *testing.T) {
	for _, refusal := range []struct {
		status int
		body   string
	}{{401, "no"}, {403, "forbidden"}, {400, "Signature header malformed"}} {
		in := newSchemeInbox(t, refusal.status, refusal.body, "cavage")
		mem := memory.New()
		opts := loopbackOptions()
		opts.Schemes = mem
		first, second := newTransport(t, opts), newTransport(t, opts)
		msg := signed(schemeSigner{"rfc9421", "cavage"})

		if out := deliverAt(t, first, in.URL, msg, at); !out.OK() {
			t.Fatalf("%d: %+v", refusal.status, out)
		}
		if got := in.seen(); !slices.Equal(got, []string{"rfc9421", "cavage"}) {
			t.Fatalf("%d: the host saw %q, want one knock then the second scheme", refusal.status, got)
		}
		host := store.HostOf(in.URL + "/")
		if scheme, learned, err := mem.HostScheme(t.Context(), host); err != nil || scheme != "cavage" || !learned.Equal(at) {
			t.Fatalf("%d: the store holds %q learned at %v (%v)", refusal.status, scheme, learned, err)
		}
		for _, tr := range []*transport.HTTP{first, second} {
			if out := deliverAt(t, tr, in.URL, msg, at.Add(time.Second)); !out.OK() {
				t.Fatalf("%d: %+v", refusal.status, out)
			}
		}
		if got := in.seen(); !slices.Equal(got, []string{"cavage", "cavage"}) {
			t.Fatalf("%d: after the knock the host saw %q, want the remembered scheme only", refusal.status, got)
		}
	}
}

// TestAnAnswerThatIsNoSignatureRefusalIsNotKnockedPast: a 400 that does
// not name the signature, a 404, a 500 are the receiver's answer to the
// request, returned as they are.
func TestAnAnswerThatIsNoSignatureRefusalIsNotKnockedPast(t *testing.T) {
	for _, status := range []int{400, 404, 500} {
		in := newSchemeInbox(t, status, "bad activity", "cavage")
		tr := newTransport(t, loopbackOptions())
		out := deliverAt(t, tr, in.URL, signed(schemeSigner{"rfc9421", "cavage"}), at)
		if out.Status != status || !slices.Equal(in.seen(), []string{"rfc9421"}) {
			t.Fatalf("%d: outcome %+v; want the one answer", status, out)
		}
	}
}

// TestBothSchemesRefusedReturnsTheLastSayingSo: a host that refuses every
// scheme gets each once; the outcome is the last refusal, naming the
// schemes refused before it, and nothing is remembered.
func TestBothSchemesRefusedReturnsTheLastSayingSo(t *testing.T) {
	in := newSchemeInbox(t, 401, "no")
	mem := memory.New()
	opts := loopbackOptions()
	opts.Schemes = mem
	out := deliverAt(t, newTransport(t, opts), in.URL, signed(schemeSigner{"rfc9421", "cavage"}), at)
	if out.Status != 401 || !strings.Contains(out.Reason, "rfc9421 (401)") || !slices.Equal(in.seen(), []string{"rfc9421", "cavage"}) {
		t.Fatalf("outcome %+v", out)
	}
	if scheme, _, _ := mem.HostScheme(t.Context(), store.HostOf(in.URL+"/")); scheme != "" {
		t.Fatalf("remembered %q for a host that took nothing", scheme)
	}
}

// TestTheFirstSchemeIsTriedAgainAfterSchemeRecheck: a remembered scheme
// holds for SchemeRecheck; then the first scheme is tried again, once: a
// host still refusing it has its scheme learned anew (another
// SchemeRecheck), a host that took it up is remembered with it.
func TestTheFirstSchemeIsTriedAgainAfterSchemeRecheck(t *testing.T) {
	in := newSchemeInbox(t, 401, "no", "cavage")
	mem := memory.New()
	opts := loopbackOptions()
	opts.Schemes = mem
	tr := newTransport(t, opts)
	msg := signed(schemeSigner{"rfc9421", "cavage"})
	host := store.HostOf(in.URL + "/")

	deliverAt(t, tr, in.URL, msg, at)
	in.seen()
	deliverAt(t, tr, in.URL, msg, at.Add(transport.SchemeRecheck-time.Second))
	if got := in.seen(); !slices.Equal(got, []string{"cavage"}) {
		t.Fatalf("within SchemeRecheck the host saw %q", got)
	}
	recheck := at.Add(transport.SchemeRecheck)
	deliverAt(t, tr, in.URL, msg, recheck)
	if got := in.seen(); !slices.Equal(got, []string{"rfc9421", "cavage"}) {
		t.Fatalf("at SchemeRecheck the host saw %q, want the first scheme tried again", got)
	}
	if _, learned, _ := mem.HostScheme(t.Context(), host); !learned.Equal(recheck) {
		t.Fatalf("learned at %v, want the recheck's %v", learned, recheck)
	}

	in.accept("rfc9421", "cavage")
	later := recheck.Add(transport.SchemeRecheck)
	deliverAt(t, tr, in.URL, msg, later)
	if scheme, _, _ := mem.HostScheme(t.Context(), host); scheme != "rfc9421" || !slices.Equal(in.seen(), []string{"rfc9421"}) {
		t.Fatalf("a host that took up the first scheme is remembered with %q", scheme)
	}
	deliverAt(t, tr, in.URL, msg, later.Add(time.Minute))
	if got := in.seen(); !slices.Equal(got, []string{"rfc9421"}) {
		t.Fatalf("then the host saw %q", got)
	}
}

// TestOneSchemeIsNeverKnocked: a signer pinned to one scheme (or a plain
// push.Signer) is sent as it signs, refused or not.
func TestOneSchemeIsNeverKnocked(t *testing.T) {
	in := newSchemeInbox(t, 401, "signature", "cavage")
	out := deliverAt(t, newTransport(t, loopbackOptions()), in.URL, signed(schemeSigner{"rfc9421"}), at)
	if out.Status != 401 || !slices.Equal(in.seen(), []string{"rfc9421"}) {
		t.Fatalf("outcome %+v", out)
	}
}

// TestARefusalOfAOneSchemeSignerNamesTheSchemeTheHostTook: a host that
// took only cavage refuses a signer of rfc9421 alone (an Ed25519 key, or a
// pinned scheme); the outcome says which scheme the host took, so that the
// evidence says what to fix, not a bare 401.
func TestARefusalOfAOneSchemeSignerNamesTheSchemeTheHostTook(t *testing.T) {
	in := newSchemeInbox(t, 401, "no", "cavage")
	opts := loopbackOptions()
	opts.Schemes = memory.New()
	tr := newTransport(t, opts)
	deliverAt(t, tr, in.URL, signed(schemeSigner{"rfc9421", "cavage"}), at) // learns cavage
	in.seen()

	out := deliverAt(t, tr, in.URL, signed(schemeSigner{"rfc9421"}), at.Add(time.Second))
	want := "the host accepted only cavage signatures when last asked (" + at.UTC().Format(time.RFC3339) + ", herald hosts), and this registration signs rfc9421 only"
	if out.Status != 401 || !strings.Contains(out.Reason, want) || !slices.Equal(in.seen(), []string{"rfc9421"}) {
		t.Fatalf("outcome %+v, want a 401 saying %q after one request", out, want)
	}
	if out := deliverAt(t, newTransport(t, loopbackOptions()), in.URL, signed(schemeSigner{"rfc9421"}), at); strings.Contains(out.Reason, "accepted only") {
		t.Fatalf("with no scheme known the refusal is the answer alone: %+v", out)
	}
}

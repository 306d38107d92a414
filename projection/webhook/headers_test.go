package webhook

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

func TestHeaderValueEncodesWhatIsNotPrintableASCII(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"order.paid", "order.paid"},
		{"tenant/42", "tenant/42"},
		{"a+b=c,d;e", "a+b=c,d;e"}, // '+' stays: decoders must leave it alone
		{"100%", "100%25"},
		{`say"hi"`, "say%22hi%22"},
		{"line\r\nInjected: 1", "line%0D%0AInjected:%201"},
		{"tab\there", "tab%09here"},
		{"Zoë", "Zo%C3%AB"},
		{"\u202Eevil", "%E2%80%AEevil"}, // a bidi override, which journal allows
		{"\x7f\x00", "%7F%00"},
		{"\xff", "%FF"}, // not UTF-8: encoded byte by byte
		{"", ""},
	} {
		if got := HeaderValue(c.in); got != c.want {
			t.Errorf("HeaderValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzHeaderValue: whatever a stream or kind holds, its header value is
// printable ASCII without spaces or '"' (valid in any HTTP client and
// server), at most three times as long, verbatim when nothing needed
// encoding, and percent-decodes back to the input.
func FuzzHeaderValue(f *testing.F) {
	for _, seed := range []string{"order.paid", "tenant/42", "a+b", "100%", "%2F", `"q"`, "a\r\nb: c", "Zoë", "\u202E", "\xff\xfe", " ", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := HeaderValue(s)
		if !isPrintableASCII(v) || strings.Contains(v, `"`) {
			t.Fatalf("HeaderValue(%q) = %q is not printable ASCII without '\"'", s, v)
		}
		if len(v) > 3*len(s) {
			t.Fatalf("HeaderValue(%q) is %d bytes, more than 3×%d", s, len(v), len(s))
		}
		if !strings.ContainsAny(s, "%\"") && v != s && isPrintableASCII(s) {
			t.Fatalf("HeaderValue(%q) = %q, want it verbatim", s, v)
		}
		back, err := url.PathUnescape(v)
		if err != nil || back != s {
			t.Fatalf("PathUnescape(HeaderValue(%q)) = %q, %v", s, back, err)
		}
	})
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Streams and kinds are a producer's text: every one journal validation
// lets through (quotes, '%', '+', non-ASCII letters, a bidi override, the
// longest kind) is delivered by a real worker over loopback, verified by the
// Standard Webhooks library, and its headers give the receiver the record's
// kind, stream and seq back.
func TestHostileStreamsAndKindsMakeValidHeaders(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t, secretA)
	db := memory.New()
	w := projtest.Worker(t, db, New())
	streams := []string{`orders/"42"`, "100%/done", "a+b", "Zoë/Ångström", "\u202Egnp.exe", strings.Repeat("é", journal.MaxStreamBytes/2)}
	kinds := []string{`say"hi"`, "50%off", "kind+plus", "commande.payée", "\u202Ekind", strings.Repeat("k", journal.MaxKindBytes)}
	for i, stream := range streams {
		if _, err := db.Append(ctx, stream, journal.Entry{ID: "evt-" + strconv.Itoa(i), Kind: kinds[i], Payload: []byte(`{}`)}); err != nil {
			t.Fatalf("journal refused %q: %v", stream, err)
		}
		if _, err := w.Register(ctx, push.Registration{Stream: stream, ID: "r", Namespace: Namespace, URL: rc.URL, Config: config(t, false, secretA)}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := w.RunOnce(ctx, time.Now(), 100) // the verifier checks the timestamp against its clock
	if err != nil || rep.Deliveries != len(streams) || rep.Retries+rep.Parked != 0 {
		t.Fatalf("sweep: %+v, %v; want %d deliveries", rep, err, len(streams))
	}
	seen := map[string]string{}
	for _, d := range rc.Received() {
		k, s, seq := d.header.Get(HeaderKind), d.header.Get(HeaderStream), d.header.Get(HeaderSeq)
		for _, v := range []string{k, s} {
			if !isPrintableASCII(v) || strings.Contains(v, `"`) {
				t.Fatalf("header value %q is not printable ASCII", v)
			}
		}
		stream, err1 := url.PathUnescape(s)
		kind, err2 := url.PathUnescape(k)
		if err1 != nil || err2 != nil || seq != "1" || !utf8.ValidString(stream) {
			t.Fatalf("headers %q, %q, %q do not decode: %v, %v", k, s, seq, err1, err2)
		}
		seen[stream] = kind
	}
	for i, stream := range streams {
		if seen[stream] != kinds[i] {
			t.Errorf("stream %q: the receiver read kind %q, want %q", stream, seen[stream], kinds[i])
		}
	}
}

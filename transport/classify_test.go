package transport_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/internal/rawtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// Every row of DESIGN.md's classification table, answered by a real HTTP
// server and read by the real transport.
func TestClassificationTable(t *testing.T) {
	const (
		imf     = "Mon, 02 Jan 2006 15:04:05 GMT"
		rfc850  = "Monday, 02-Jan-06 15:04:05 GMT"
		asctime = "Mon Jan _2 15:04:05 2006"
	)
	ceiling := transport.RetryAfterCeiling
	cases := []struct {
		name       string
		status     int
		header     http.Header
		verdict    push.Verdict
		retryAfter time.Duration
		hasRA      bool
		location   string
		reason     string
	}{
		{name: "200", status: 200, verdict: push.Accepted},
		{name: "201", status: 201, verdict: push.Accepted},
		{name: "202", status: 202, verdict: push.Accepted},
		{name: "204", status: 204, verdict: push.Accepted},
		{name: "200 ignores Retry-After", status: 200, header: h("Retry-After", "120"), verdict: push.Accepted},

		{name: "410 parks", status: 410, verdict: push.Permanent, reason: "410 Gone: the receiver says it is gone"},
		{name: "410 ignores Retry-After", status: 410, header: h("Retry-After", "120"), verdict: push.Permanent, reason: "410 Gone"},

		{name: "301", status: 301, header: h("Location", "https://elsewhere.example/in"), verdict: push.Transient, location: "https://elsewhere.example/in", reason: "301 Moved Permanently: redirect not followed (to elsewhere.example)"},
		{name: "302", status: 302, header: h("Location", "https://elsewhere.example/in"), verdict: push.Transient, location: "https://elsewhere.example/in", reason: "302 Found: redirect not followed"},
		{name: "303", status: 303, header: h("Location", "/relative"), verdict: push.Transient, location: "/relative", reason: "303 See Other: redirect not followed"},
		{name: "307", status: 307, header: h("Location", "https://elsewhere.example/in"), verdict: push.Transient, location: "https://elsewhere.example/in"},
		{name: "308", status: 308, header: h("Location", "https://elsewhere.example/in"), verdict: push.Transient, location: "https://elsewhere.example/in"},
		{name: "302 with Retry-After", status: 302, header: h("Location", "https://elsewhere.example/", "Retry-After", "30"), verdict: push.Transient, location: "https://elsewhere.example/", retryAfter: 30 * time.Second, hasRA: true},

		{name: "429 without Retry-After", status: 429, verdict: push.Transient, reason: "429 Too Many Requests"},
		{name: "429 Retry-After seconds", status: 429, header: h("Retry-After", "120"), verdict: push.Transient, retryAfter: 120 * time.Second, hasRA: true, reason: "429 Too Many Requests; Retry-After 2m0s"},
		{name: "503 Retry-After IMF-fixdate", status: 503, header: h("Retry-After", at.Add(90*time.Second).Format(imf)), verdict: push.Transient, retryAfter: 90 * time.Second, hasRA: true},
		{name: "503 Retry-After RFC 850", status: 503, header: h("Retry-After", at.Add(2*time.Hour).Format(rfc850)), verdict: push.Transient, retryAfter: 2 * time.Hour, hasRA: true},
		{name: "503 Retry-After asctime", status: 503, header: h("Retry-After", at.Add(45*time.Second).Format(asctime)), verdict: push.Transient, retryAfter: 45 * time.Second, hasRA: true},
		{name: "503 Retry-After in the past", status: 503, header: h("Retry-After", at.Add(-time.Hour).Format(imf)), verdict: push.Transient, retryAfter: 0, hasRA: true},
		{name: "503 Retry-After absurd", status: 503, header: h("Retry-After", "99999999999999999999999999"), verdict: push.Transient, retryAfter: ceiling, hasRA: true},
		{name: "429 Retry-After negative", status: 429, header: h("Retry-After", "-5"), verdict: push.Transient},
		{name: "429 Retry-After garbage", status: 429, header: h("Retry-After", "soon, please"), verdict: push.Transient},
		{name: "503 without Retry-After", status: 503, verdict: push.Transient, reason: "503 Service Unavailable"},

		{name: "408", status: 408, verdict: push.Transient, reason: "408 Request Timeout"},
		{name: "425", status: 425, verdict: push.Transient, reason: "425 Too Early"},
		{name: "500", status: 500, verdict: push.Transient, reason: "500 Internal Server Error"},
		{name: "502", status: 502, verdict: push.Transient},
		{name: "504", status: 504, verdict: push.Transient},
		{name: "599", status: 599, verdict: push.Transient, reason: "status 599"},

		{name: "400", status: 400, verdict: push.Rejected, reason: "400 Bad Request"},
		{name: "401", status: 401, verdict: push.Rejected},
		{name: "403", status: 403, verdict: push.Rejected},
		{name: "404", status: 404, verdict: push.Rejected},
		{name: "409", status: 409, verdict: push.Rejected},
		{name: "413", status: 413, verdict: push.Rejected},
		{name: "422", status: 422, verdict: push.Rejected},
		{name: "403 with Retry-After is transient", status: 403, header: h("Retry-After", "60"), verdict: push.Transient, retryAfter: time.Minute, hasRA: true},
		{name: "403 with garbage Retry-After is rejected", status: 403, header: h("Retry-After", "later"), verdict: push.Rejected},

		{name: "600 is not a status herald knows", status: 600, verdict: push.Transient, reason: "not a final HTTP status"},
	}
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.URL.Query().Get("case"))
		c := cases[i]
		for k, vs := range c.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(c.status)
		fmt.Fprintf(w, "answer to case %d", i)
	})
	tr := newTransport(t, loopbackOptions())
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := deliver(t, tr, fmt.Sprintf("%s/hook?case=%d", srv.URL, i), message(`{"n":1}`))
			if out.Verdict != c.verdict || out.Status != c.status || out.RetryAfter != c.retryAfter ||
				out.HasRetryAfter != c.hasRA || out.Location != c.location {
				t.Fatalf("got %s\nwant %v status=%d retry_after=%v/%t location=%q", describe(out), c.verdict, c.status, c.retryAfter, c.hasRA, c.location)
			}
			if c.reason != "" {
				mustContain(t, "Reason", out.Reason, c.reason)
			}
			if want := (c.status == 502 || c.status == 503 || c.status == 504) && !c.hasRA; out.HostLevel != want {
				t.Errorf("HostLevel = %t, want %t: only a gateway's 502/503/504 without Retry-After says nothing about the record", out.HostLevel, want)
			}
			if (out.Reason == "") != (c.verdict == push.Accepted) {
				t.Errorf("Reason = %q: want it empty exactly when accepted", out.Reason)
			}
			if want := fmt.Sprintf("answer to case %d", i); c.verdict == push.Accepted && len(out.Body) != 0 {
				t.Errorf("Body = %q: a success keeps no answer (it leaves no evidence)", out.Body)
			} else if c.verdict != push.Accepted && c.status != 204 && string(out.Body) != want {
				t.Errorf("Body = %q, want %q", out.Body, want)
			}
			if out.Duration <= 0 {
				t.Errorf("Duration = %v, want the wall time of the attempt", out.Duration)
			}
		})
	}
}

// The failures that bring no answer at all: each is Transient (or, for the
// guard, Permanent) with a reason in words.
func TestClassificationOfFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		out := deliver(t, newTransport(t, loopbackOptions()), "http://"+addr+"/hook", message("{}"))
		wantNoAnswer(t, out)
		mustContain(t, "Reason", out.Reason, "connection refused")
	})
	// hangUp answers by closing the connection: with RST when reset.
	hangUp := func(t *testing.T, reset bool) string {
		return newCounter(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if reset {
				conn.(*net.TCPConn).SetLinger(0)
			}
			conn.Close()
		}).URL + "/hook"
	}
	t.Run("connection reset", func(t *testing.T) {
		out := deliver(t, newTransport(t, loopbackOptions()), hangUp(t, true), message("{}"))
		wantNoAnswer(t, out)
		if !strings.Contains(out.Reason, "reset") && !strings.Contains(out.Reason, "closed") {
			t.Errorf("Reason = %q, want it to say the connection was reset or closed", out.Reason)
		}
	})
	t.Run("closed without an answer", func(t *testing.T) {
		out := deliver(t, newTransport(t, loopbackOptions()), hangUp(t, false), message("{}"))
		wantNoAnswer(t, out)
		mustContain(t, "Reason", out.Reason, "closed by the receiver")
	})
	t.Run("DNS failure", func(t *testing.T) {
		opts := loopbackOptions()
		opts.Resolver = &fakeDNS{}
		out := deliver(t, newTransport(t, opts), "http://nowhere.test/hook", message("{}"))
		wantNoAnswer(t, out)
		if out.Reason != "dns: lookup nowhere.test: no such host" {
			t.Errorf("Reason = %q", out.Reason)
		}
	})
	t.Run("resolver error that is not a DNSError", func(t *testing.T) {
		opts := loopbackOptions()
		opts.Resolver = &fakeDNS{err: errors.New("resolver unavailable")}
		out := deliver(t, newTransport(t, opts), "http://nowhere.test/hook", message("{}"))
		if out.Verdict != push.Transient || !out.HostLevel || out.Reason != "dns: lookup nowhere.test: resolver unavailable" {
			t.Fatalf("got %s", describe(out))
		}
	})
	t.Run("guard refusal", func(t *testing.T) {
		out := deliver(t, newTransport(t, transport.Options{}), "https://10.1.2.3/hook", message("{}"))
		if out.Verdict != push.Permanent || out.HostLevel || out.HostAnswered() || out.Reason != "netguard: 10.1.2.3 is in 10.0.0.0/8 (RFC 1918 private); herald run/sweep --allow-private-network (Options.AllowPrivateNetwork) opts in" {
			t.Fatalf("got %s", describe(out))
		}
	})
}

// Classify without a network: the shape of the verdicts for every status
// from 100 to 999.
func TestClassifyEveryStatus(t *testing.T) {
	for status := 100; status <= 999; status++ {
		out := transport.Classify(status, http.Header{}, at)
		var want push.Verdict
		switch {
		case status >= 200 && status < 300:
			want = push.Accepted
		case status == 410:
			want = push.Permanent
		case status >= 400 && status < 500 && status != 408 && status != 425 && status != 429:
			want = push.Rejected
		default:
			want = push.Transient
		}
		if out.Verdict != want || out.Status != status || out.HasRetryAfter {
			t.Errorf("Classify(%d) = %s, want %v", status, describe(out), want)
		}
		gateway := status == 502 || status == 503 || status == 504
		if out.HostLevel != gateway || out.HostAnswered() == gateway {
			t.Errorf("Classify(%d): HostLevel %t, HostAnswered %t; want host-level exactly for 502, 503, 504", status, out.HostLevel, out.HostAnswered())
		}
		if gateway {
			if withRA := transport.Classify(status, h("Retry-After", "30"), at); withRA.HostLevel || !withRA.HostAnswered() {
				t.Errorf("Classify(%d, Retry-After 30) is host-level: a Retry-After is an answer about the request", status)
			}
		}
	}
}

func h(kv ...string) http.Header {
	hdr := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		hdr.Set(kv[i], kv[i+1])
	}
	return hdr
}

// rawReceiver listens on loopback and, to each request it reads, writes
// answer's bytes and closes the connection (nil: closes without a word);
// over TLS when config is not nil.
func rawReceiver(t *testing.T, answer []byte, config *tls.Config) string {
	return rawServer(t, config, func(conn net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = conn.Write(answer)
	})
}

// rawServer is rawtest.Serve's /hook URL, https when config is not nil.
func rawServer(t *testing.T, config *tls.Config, serve func(net.Conn)) string {
	scheme := "http://"
	if config != nil {
		scheme = "https://"
	}
	return scheme + rawtest.Serve(t, config, serve) + "/hook"
}

// A receiver that began an answer (its bytes came back) which is not valid
// HTTP has answered: the failure is the registration's, as a 5xx's is
// (DESIGN v4, "one path's 5xx is that registration's, not its host's"),
// its reason showing what was sent, Go-quoted and cut; an answer, it
// brings a down host up (HostAnswered). A receiver that
// closes without a byte has not answered: still the host's.
func TestAnAnswerThatIsNotHTTPIsTheRegistrations(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, c := range []struct {
		name, answer, reason string
	}{
		{"malformed header line", "HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n",
			`answer not valid HTTP: malformed MIME header: missing colon: "Bad Header Line"`},
		{"malformed header name", "HTTP/1.1 200 OK\r\nBad Name: \x1b]0;x\a\r\n\r\n",
			`answer not valid HTTP: malformed MIME header line: "Bad Name: \x1b]0;x\a"`},
		{"malformed status line", "\x1b[31mhello\x00\r\n\r\n",
			`answer not valid HTTP: malformed HTTP response "\x1b[31mhello\x00"`},
		{"malformed status code", "HTTP/1.1 2000 OK\r\n\r\n",
			`answer not valid HTTP: malformed HTTP status code "2000"`},
		{"a long header line, cut", "HTTP/1.1 200 OK\r\n" + long + "\r\n\r\n",
			`answer not valid HTTP: malformed MIME header: missing colon: "` + long[:256] + `"… (3000 bytes)`},
		{"cut in the middle of the headers", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n",
			"answer cut: connection closed by the receiver in the middle of its answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := deliver(t, newTransport(t, loopbackOptions()), rawReceiver(t, []byte(c.answer), nil), message("{}"))
			if out.Verdict != push.Transient || out.Status != 0 || out.HostLevel || !out.HostAnswered() {
				t.Fatalf("got %s (host-level %t), want transient, not host-level, the host answered", describe(out), out.HostLevel)
			}
			if out.Reason != c.reason {
				t.Errorf("Reason = %q, want %q", out.Reason, c.reason)
			}
		})
	}
	t.Run("over TLS", func(t *testing.T) {
		ca := keytest.NewCA(t)
		server := ca.RequireClients(t)
		server.ClientAuth = tls.NoClientCert
		opts := loopbackOptions()
		opts.TLSConfig = &tls.Config{RootCAs: ca.Pool}
		out := deliver(t, newTransport(t, opts), rawReceiver(t, []byte("HTTP/1.1 200 OK\r\nBad Header Line\r\n\r\n"), server), message("{}"))
		if out.Verdict != push.Transient || out.HostLevel || !out.HostAnswered() || !strings.HasPrefix(out.Reason, "answer not valid HTTP: ") {
			t.Fatalf("got %s (host-level %t), want the registration's, the host answered", describe(out), out.HostLevel)
		}
	})
	t.Run("closed without a byte: the host's", func(t *testing.T) {
		out := deliver(t, newTransport(t, loopbackOptions()), rawReceiver(t, nil, nil), message("{}"))
		wantNoAnswer(t, out)
		mustContain(t, "Reason", out.Reason, "connection closed by the receiver waiting for the response headers")
	})
}

// A receiver that writes a banner that is not HTTP and closes, before
// herald writes its request or while it does (the request's write then
// fails on the reset), has answered: the registration's failure, every
// time, in the same words. net/http may read the banner as an answer,
// read it before the request counts ("Unsolicited response"), or fail the
// write and close before reading it; each said the host failed, 1 time in
// 40 here. What the kernel delivered is heard however the race goes; a
// banner it never delivered (lost, then reset) cannot be, and stays the
// host's.
func TestABannerIsTheRegistrationsAnswerEveryTime(t *testing.T) {
	const banner = "SSH-2.0-OpenSSH_9.6\r\n"
	big := `{"pad":"` + strings.Repeat("x", 4<<20) + `"}` // more than loopback's buffers: the write is cut
	for _, c := range []struct {
		name  string
		first int // request bytes the receiver reads before its banner
		body  string
	}{
		{"before the request", 0, "{}"},
		{"while the request is written", 10, big},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := rawServer(t, nil, func(conn net.Conn) {
				_, _ = io.ReadFull(conn, make([]byte, c.first))
				_, _ = conn.Write([]byte(banner))
			})
			// A timeout long enough that a loaded machine's stall is not
			// taken for the host's silence; 200 rounds find the race on main.
			opts := loopbackOptions()
			opts.Timeout = time.Minute
			tr := newTransport(t, opts)
			for i := range 200 {
				out := deliver(t, tr, url, message(c.body))
				if out.Verdict != push.Transient || out.HostLevel || !out.HostAnswered() ||
					out.Reason != `answer not valid HTTP: malformed HTTP response "SSH-2.0-OpenSSH_9.6"` {
					t.Fatalf("attempt %d: got %s (host-level %t), want the registration's malformed answer", i+1, describe(out), out.HostLevel)
				}
			}
		})
	}
}

// An answer whose fault lies past the first bytes heardConn keeps (4 KiB)
// is judged by what net/http read of it, not by those bytes alone: cut
// there, they would say the receiver closed in the middle of its answer.
func TestAnAnswerBrokenPastItsFirstBytesIsJudgedWhole(t *testing.T) {
	pad := "X-Pad: " + strings.Repeat("p", 5000) + "\r\n"
	for _, c := range []struct {
		name, answer, reason string
	}{
		{"a malformed header line after 5 KB", "HTTP/1.1 200 OK\r\n" + pad + "Bad Header Line\r\n\r\n",
			`answer not valid HTTP: malformed MIME header: missing colon: "Bad Header Line"`},
		{"headers over net/http's 64 KiB", "HTTP/1.1 200 OK\r\n" + strings.Repeat(pad, 14) + "\r\n",
			"answer not valid HTTP: net/http: server response headers exceeded 65536 bytes; aborted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := deliver(t, newTransport(t, loopbackOptions()), rawReceiver(t, []byte(c.answer), nil), message("{}"))
			if out.Verdict != push.Transient || out.HostLevel || !out.HostAnswered() || out.Reason != c.reason {
				t.Fatalf("got %s (host-level %t), want the registration's, reason %q", describe(out), out.HostLevel, c.reason)
			}
		})
	}
}

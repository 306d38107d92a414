package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/push"
)

// Body bounds, each with the reason it is what it is.
const (
	// MaxResponseBody (64 KiB) is how much of an answer is read as the
	// answer: redaction looks at it and read errors in it are reported.
	// Evidence keeps its first push.MaxEvidenceBody (512) bytes.
	MaxResponseBody = 64 << 10
	// MaxDrain (16 MiB) is how much more is read and discarded so that the
	// connection goes back to the pool: a 10 MB error page still leaves a
	// warm connection, while an endless body is cut after MaxResponseBody
	// + MaxDrain bytes (or at the timeout, whichever comes first) and its
	// connection closed. Reading 16 MiB on a fast link costs about what a
	// new TLS handshake to a far receiver does.
	MaxDrain = 16 << 20
)

// errDeadline is the cause of an attempt's own timeout, which tells it
// apart from the caller's context ending.
var errDeadline = errors.New("transport: attempt timed out")

// HTTP is herald's HTTP transport: it POSTs a message to a registration's
// URL through a network guard and classifies the answer (see the package
// documentation). It is safe for concurrent use and keeps one connection
// pool; create one per process and share it between workers.
type HTTP struct {
	client    *http.Client
	transport *http.Transport
	guard     *guard
	urls      *urlCache // the URLs guard accepted, parsed (behind a pointer: a formatted HTTP never shows them)
	userAgent []string  // the User-Agent header's value, shared by every request: capped at its length, so an Add copies it
	opts      Options
	logger    *slog.Logger
}

var _ push.Transport = (*HTTP)(nil)

// New returns an HTTP transport configured by opts (zero fields mean the
// documented defaults). Errors wrap journal.ErrInvalid and name every bad
// field ("Options.Timeout", "AllowHosts[1]").
func New(opts Options) (*HTTP, error) {
	o, allow, err := opts.validate()
	if err != nil {
		return nil, fmt.Errorf("transport: new: %w", err)
	}
	g := &guard{
		allowHTTP:    o.AllowHTTP,
		allowPrivate: o.AllowPrivateNetwork,
		allowlist:    allow,
		resolver:     o.Resolver,
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	g.dialer = net.Dialer{KeepAlive: 30 * time.Second, Control: g.control}
	tlsConfig := &tls.Config{}
	if o.TLSConfig != nil {
		tlsConfig = o.TLSConfig.Clone()
	}
	tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
	tr := &http.Transport{
		// Every stage (dial, TLS, headers, body) is bounded by the attempt's
		// context deadline, so the Transport's own timeouts stay unset.
		Proxy:                  nil, // never: a proxy would dial where the guard cannot see
		DialContext:            g.dialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true, // a custom DialContext turns HTTP/2 off unless asked
		DisableCompression:     true, // evidence is the bytes sent; no decompression bombs
		MaxIdleConns:           MaxIdleConns,
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        IdleConnTimeout,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	client := &http.Client{
		Transport: tr,
		// Redirects are an SSRF path (a public receiver answering 302 to
		// the metadata service): the 3xx itself is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	ua := []string{o.UserAgent}
	return &HTTP{client: client, transport: tr, guard: g, urls: &urlCache{}, userAgent: ua[:1:1], opts: o, logger: o.Logger}, nil
}

// Refusals lists every rule of this transport's network guard (its
// Options: AllowHTTP, AllowPrivateNetwork, AllowHosts) that raw breaks
// before any connection is made, as URLRefusals does for the default
// Options; none when Deliver would try it. Each is a *RefusedError naming
// the flag that lifts it, when one does. What a DNS name resolves to is
// judged only at connect time.
func (t *HTTP) Refusals(raw string) []error {
	return t.guard.refusals(raw)
}

// Deliver POSTs msg to reg.URL and classifies the answer (push.Transport).
//
// The request carries msg.Body, Content-Type msg.ContentType, the headers of
// msg.Header and User-Agent (Options.UserAgent); msg.Signer, if set, signs
// the final request with at just before it is sent, on every attempt. A
// signing failure is herald's fault: Transient, with a reason starting
// "sign: " and the signer's error, redacted like any reason (signers must
// not put key material in their errors: no transport can tell it). The URL
// is checked by the network guard before anything is built, and every
// address at connect time.
//
// A receiver's failure is an Outcome, never an error. Deliver returns a
// non-nil error (wrapping ctx's error) only when ctx ended before an answer
// came: the attempt says nothing about the receiver. Once a status line has
// arrived the Outcome is returned even if ctx ends while the body is read.
//
// The body is read up to MaxResponseBody, then drained up to MaxDrain so
// the connection is reused, then closed; Outcome.Body keeps its first
// push.MaxEvidenceBody bytes. Outcome.Reason, Body and Location never hold
// a request header value, the URL's query or a long path segment: they are
// replaced by "[redacted]".
func (t *HTTP) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return push.Outcome{}, fmt.Errorf("transport: not delivered to %s: %w", reg.Host(), err)
	}
	start := time.Now()
	out, err := t.attempt(ctx, reg, msg, at)
	if err != nil {
		return push.Outcome{}, err
	}
	out.Duration = time.Since(start)
	if t.logger.Enabled(ctx, slog.LevelDebug) { // the attributes cost more than the check
		t.logger.LogAttrs(ctx, slog.LevelDebug, "herald: delivery attempt",
			slog.String("stream", reg.Stream), slog.String("registration", reg.ID), slog.String("host", reg.Host()),
			slog.String("message", msg.ID), slog.String("verdict", out.Verdict.String()), slog.Int("status", out.Status),
			slog.Duration("duration", out.Duration), slog.String("reason", out.Reason))
	}
	return out, nil
}

// NewRequest returns, without sending it, the request Deliver would send for
// msg to reg.URL at the instant at: the POST with msg.Body, the headers of
// msg.Header, Content-Type msg.ContentType, User-Agent, and what msg.Signer
// adds when signing at at. Tests and tools use it to see or pin the exact
// bytes herald sends. Errors: the network guard refusing the URL (its
// scheme, its host or an IP literal; addresses behind a name are checked
// only at connect time), or "sign: " and the signer's error, redacted as
// an Outcome's reason is.
func (t *HTTP) NewRequest(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (*http.Request, error) {
	u, err := t.urls.check(t.guard, reg.URL)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	req, err := t.newRequest(ctx, u, msg, at)
	if err != nil {
		if req != nil {
			return nil, fmt.Errorf("transport: %s", newRedactor(u, req.Header).String(err.Error()))
		}
		return nil, fmt.Errorf("transport: %w", err)
	}
	return req, nil
}

// newRequest builds and signs the request for msg to u. On a signing error
// it returns the request as far as it was built, for the redactor.
func (t *HTTP) newRequest(ctx context.Context, u *url.URL, msg push.Message, at time.Time) (*http.Request, error) {
	// u is parsed and checked already: the request takes a copy of it
	// rather than its text parsed a second time.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(msg.Body))
	if err != nil {
		return nil, err
	}
	target := *u
	target.Host = strings.TrimSuffix(target.Host, ":") // as NewRequest does: "host:" is "host"
	req.URL, req.Host = &target, target.Host
	req.Header = copyHeader(msg.Header)
	if msg.ContentType != "" {
		req.Header.Set("Content-Type", msg.ContentType)
	}
	req.Header["User-Agent"] = t.userAgent
	if msg.Signer != nil {
		if err := msg.Signer.Sign(req, msg.Body, at); err != nil {
			return req, fmt.Errorf("sign: %w", err)
		}
	}
	return req, nil
}

func (t *HTTP) attempt(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	u, err := t.urls.check(t.guard, reg.URL)
	if err != nil {
		return push.Outcome{Verdict: push.Permanent, Reason: err.Error()}, nil
	}
	reqCtx, cancel := context.WithTimeoutCause(ctx, t.opts.Timeout, errDeadline)
	defer cancel()
	st := &stageTrace{}
	st.trace.GotConn = func(httptrace.GotConnInfo) { st.stage.Store(stageSending) }
	st.trace.WroteRequest = func(httptrace.WroteRequestInfo) { st.stage.Store(stageWaiting) }
	reqCtx = httptrace.WithClientTrace(reqCtx, &st.trace)
	stage := &st.stage
	req, err := t.newRequest(reqCtx, u, msg, at)
	if err != nil {
		if req == nil {
			return push.Outcome{Verdict: push.Transient, Reason: "request: cannot be built"}, nil
		}
		return push.Outcome{Verdict: push.Transient, Reason: newRedactor(u, req.Header).String(err.Error())}, nil
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, fmt.Errorf("transport: delivery to %s abandoned: %w", u.Host, ctx.Err())
		}
		timedOut := errors.Is(context.Cause(reqCtx), errDeadline)
		out := classifyError(err, timedOut, t.opts.Timeout, stage.Load())
		out.Reason = newRedactor(u, req.Header).String(out.Reason)
		return out, nil
	}
	out := Classify(resp.StatusCode, resp.Header, at)
	if out.Verdict == push.Accepted {
		// A success leaves no evidence (the cursor records it): drain the
		// answer for the connection's sake and keep none of it, which also
		// spares building the redactor on the hot path.
		_, _ = readBody(resp.Body, 0)
		return out, nil
	}
	red := newRedactor(u, req.Header)
	head, readErr := readBody(resp.Body, push.MaxEvidenceBody+red.longest())
	out.Body = red.Bytes(head)
	if len(out.Body) > push.MaxEvidenceBody {
		out.Body = out.Body[:push.MaxEvidenceBody]
	}
	if out.Location != "" { // redact before cutting, so no secret is left half
		out.Location = cut(red.String(resp.Header.Get("Location")), MaxLocationBytes)
	}
	if readErr != nil && out.Verdict != push.Accepted {
		words := readErr.Error()
		if errors.Is(context.Cause(reqCtx), errDeadline) {
			words = fmt.Sprintf("timeout after %v", t.opts.Timeout)
		}
		out.Reason += "; body cut: " + words
	}
	out.Reason = red.String(out.Reason)
	return out, nil
}

// stageTrace follows an attempt's stage (classify.go) through its
// httptrace hooks: the stage and the hooks in one allocation.
type stageTrace struct {
	stage atomic.Int32
	trace httptrace.ClientTrace
}

// copyHeader returns a copy of h that the request may change (Set, Add,
// a signer's headers) without touching h, sized for the headers the
// transport and the signers add: each value slice is the original's, capped
// at its length, so that an Add copies it rather than writing into it.
func copyHeader(h http.Header) http.Header {
	c := make(http.Header, len(h)+6)
	for k, v := range h {
		c[k] = v[:len(v):len(v)]
	}
	return c
}

// readBody reads up to MaxResponseBody bytes of body, keeping the first
// keep, then discards up to MaxDrain more so the connection can be reused,
// and closes it. err is a failure to read the first MaxResponseBody bytes;
// a body that runs past the drain is simply cut (its connection is closed).
func readBody(body io.ReadCloser, keep int) (head []byte, err error) {
	defer body.Close()
	keep = min(keep, MaxResponseBody)
	buf := make([]byte, keep)
	n, err := io.ReadFull(body, buf)
	head = buf[:n]
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return head, nil
	}
	if err != nil {
		return head, err
	}
	if _, err := io.CopyN(io.Discard, body, int64(MaxResponseBody-keep)); err != nil {
		if errors.Is(err, io.EOF) {
			return head, nil
		}
		return head, err
	}
	_, _ = io.CopyN(io.Discard, body, MaxDrain)
	return head, nil
}

// CloseIdleConnections closes the pooled connections that are not in use.
// The transport stays usable.
func (t *HTTP) CloseIdleConnections() { t.transport.CloseIdleConnections() }

// String describes the transport by its options (no secrets).
func (t *HTTP) String() string { return "transport.HTTP{" + t.opts.String() + "}" }

package transport

import (
	"bytes"
	"cmp"
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

	"github.com/heraldpush/herald"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Defaults and bounds of Options.
const (
	// DefaultTimeout suits a slow receiver behind a cold TLS handshake, and
	// two fit in the worker's 30 s lease.
	DefaultTimeout = 15 * time.Second
	// MaxTimeout: a longer attempt would outlive any sensible lease.
	MaxTimeout = 10 * time.Minute
	// DefaultMaxIdleConnsPerHost (16) keeps a warm connection for each
	// message in flight to one host up to a --max-per-host of 16 (the
	// worker's default is 4), for a fan-out to one big host.
	DefaultMaxIdleConnsPerHost = 16
	MaxIdleConnsPerHostLimit   = 1024
)

// Options configure an HTTP transport. The zero value is the safe default:
// HTTPS only, public addresses only, any host, DefaultTimeout per attempt
// (package doc, "Network guard"). Every fmt verb prints String.
type Options struct {
	// Timeout bounds one attempt, dial to last body byte: 1 ms to
	// MaxTimeout; zero means DefaultTimeout.
	Timeout time.Duration
	// AllowHTTP permits http:// URLs.
	AllowHTTP bool
	// AllowPrivateNetwork permits loopback, RFC 1918, carrier-grade NAT and
	// unique local addresses (CheckAddress), for tests, demos and receivers
	// inside one's own network.
	AllowPrivateNetwork bool
	// AllowHosts, when not empty, lists the only hosts herald posts to
	// (HostPattern); the address rules still apply to them.
	AllowHosts []string
	// MaxIdleConnsPerHost bounds the keep-alive connections kept per host:
	// 1 to MaxIdleConnsPerHostLimit; zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// TLSConfig, if set, is cloned and used for HTTPS (a private CA's
	// RootCAs, client certificates); nil means the system roots. The
	// minimum version is TLS 1.2 either way.
	TLSConfig *tls.Config
	// Proxy, if set, is the HTTP CONNECT proxy every request goes through
	// (ParseProxy's form), for static egress addresses; a registration's
	// Endpoint.Proxy replaces it. It is the operator's choice: the guard
	// checks the destinations, not it (package doc, "Egress proxy").
	Proxy string
	// Resolver looks host names up at dial time; nil means
	// net.DefaultResolver.
	Resolver Resolver
	// Schemes remembers the signature scheme each host accepted (package
	// doc, "Signature schemes"): a store, shared by every worker. Nil
	// means this transport remembers for itself.
	Schemes SchemeMemory
	// Logger receives one debug line per attempt (host, status, verdict,
	// duration, reason; never a body, header, path or query). Nil means
	// slog.Default().
	Logger *slog.Logger
}

// String summarises the options; of TLSConfig, Resolver and Logger it says
// only whether they are set.
func (o Options) String() string {
	set := map[bool]string{true: "set", false: "nil"}
	return fmt.Sprintf("transport.Options{Timeout: %v, AllowHTTP: %t, AllowPrivateNetwork: %t, AllowHosts: %d patterns, MaxIdleConnsPerHost: %d"+
		", TLSConfig: %s, Proxy: %s, Resolver: %s, Schemes: %s, Logger: %s}",
		o.Timeout, o.AllowHTTP, o.AllowPrivateNetwork, len(o.AllowHosts), o.MaxIdleConnsPerHost,
		set[o.TLSConfig != nil], set[o.Proxy != ""], set[o.Resolver != nil], set[o.Schemes != nil], set[o.Logger != nil])
}

// Format prints String for every verb: none walks into the TLS configuration.
func (o Options) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// Bounds of an answer's body, in bytes.
const (
	// MaxResponseBody is how much of an answer is read and checked for errors.
	MaxResponseBody = 64 << 10
	// MaxDrain is how much more is read and discarded so that the
	// connection goes back to the pool (reading it costs about a new TLS
	// handshake to a far receiver); a longer body's connection is closed.
	MaxDrain = 16 << 20
)

// userAgent is every request's User-Agent header, shared: its capacity is
// its length, so an Add copies it.
var userAgent = []string{"herald/" + herald.Version}

// errDeadline is the cause of an attempt's own timeout, which tells it
// apart from the caller's context ending.
var errDeadline = errors.New("transport: attempt timed out")

// HTTP is herald's HTTP transport (package doc), safe for concurrent use.
type HTTP struct {
	client  *http.Client // for registrations without a proxy or client certificate of their own
	guard   *guard
	urls    *urlCache // behind a pointer: %#v of an HTTP never prints them
	routes  *routes   // the registrations' endpoint settings, and their clients
	opts    Options
	tls     *tls.Config // the base of every client's
	proxy   *url.URL    // Options.Proxy, parsed
	schemes *schemes
}

var _ push.Transport = (*HTTP)(nil)

// New returns an HTTP transport configured by opts. Errors wrap
// journal.ErrInvalid and name every bad field ("Options.Timeout",
// "AllowHosts[1]").
func New(o Options) (*HTTP, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, journal.Invalid("Options."+field, format, args...))
	}
	switch {
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	case o.Timeout < time.Millisecond || o.Timeout > MaxTimeout:
		bad("Timeout", "is %v: it must be from 1ms to %v (0 means %v)", o.Timeout, MaxTimeout, DefaultTimeout)
	}
	switch {
	case o.MaxIdleConnsPerHost == 0:
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	case o.MaxIdleConnsPerHost < 1 || o.MaxIdleConnsPerHost > MaxIdleConnsPerHostLimit:
		bad("MaxIdleConnsPerHost", "is %d: it must be from 1 to %d (0 means %d)", o.MaxIdleConnsPerHost, MaxIdleConnsPerHostLimit, DefaultMaxIdleConnsPerHost)
	}
	g := &guard{allowHTTP: o.AllowHTTP, allowPrivate: o.AllowPrivateNetwork, resolver: cmp.Or[Resolver](o.Resolver, net.DefaultResolver)}
	for i, s := range o.AllowHosts {
		p, err := ParseHostPattern(s)
		if inv, ok := errors.AsType[*journal.InvalidError](err); ok {
			errs = append(errs, &journal.InvalidError{Field: fmt.Sprintf("AllowHosts[%d]", i), Reason: inv.Reason})
		}
		g.allowlist = append(g.allowlist, p)
	}
	var egress *url.URL
	if o.Proxy != "" {
		var err error
		if egress, err = ParseProxy("Options.Proxy", o.Proxy); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("transport: new: %w", err)
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	g.dialer = net.Dialer{KeepAlive: 30 * time.Second, Control: g.control}
	tlsConfig := cmp.Or(o.TLSConfig.Clone(), &tls.Config{}) // Clone of nil is nil
	tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
	t := &HTTP{guard: g, urls: &urlCache{}, routes: &routes{}, schemes: &schemes{memory: o.Schemes}, opts: o, tls: tlsConfig, proxy: egress}
	t.client = t.newClient(clientKey{}, nil)
	return t, nil
}

// newClient returns the client of k: through k's proxy (the daemon's when
// none), presenting cert when not nil.
func (t *HTTP) newClient(k clientKey, cert *tls.Certificate) *http.Client {
	// Each client its own copy: http.Transport writes NextProtos into its
	// config on first use, a race between clients sharing one.
	tlsConfig, dial := t.tls.Clone(), t.guard.dialContext
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	switch {
	case k.proxy != "":
		u, _ := ParseProxy("config.proxy", k.proxy) // checked when the route was made
		dial = t.guard.dialVia(proxyOf(u), true)
	case t.proxy != nil:
		dial = t.guard.dialVia(proxyOf(t.proxy), false)
	}
	return &http.Client{
		// The attempt's context deadline bounds every stage, so the
		// Transport's own timeouts stay unset.
		Transport: &http.Transport{
			Proxy:                  nil, // the dialer tunnels through a proxy itself, after the guard's check
			DialContext:            heardDial(dial),
			TLSClientConfig:        tlsConfig,
			ForceAttemptHTTP2:      true, // a custom DialContext turns HTTP/2 off unless asked
			DisableCompression:     true, // evidence is the bytes sent; no decompression bombs
			MaxIdleConns:           256,  // over all hosts: a fan-out to thousands keeps no thousands of sockets
			MaxIdleConnsPerHost:    t.opts.MaxIdleConnsPerHost,
			IdleConnTimeout:        90 * time.Second, // over a sweep interval, under most servers' keep-alive
			MaxResponseHeaderBytes: 64 << 10,
		},
		// A redirect is an SSRF path (a 302 to the metadata service): the
		// 3xx itself is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Refusals is URLRefusals under this transport's Options: every rule raw
// breaks before any connection is made, none when Deliver would try it.
func (t *HTTP) Refusals(raw string) []error { return t.guard.refusals(raw) }

// Deliver POSTs msg to reg.URL and classifies the answer (package doc). The
// request carries msg.Body, msg.Header, Content-Type msg.ContentType and
// User-Agent herald/<version>; msg.Signer, if set, signs it last, with at.
// Outcome.Body keeps the first store.MaxEvidenceBody bytes of a failed
// answer, redacted. The error (wrapping ctx's) is for ctx ending before an
// answer.
func (t *HTTP) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return push.Outcome{}, fmt.Errorf("transport: not delivered to %s: %w", reg.Host(), err)
	}
	start := time.Now()
	var out push.Outcome
	var err error
	if g, ok := msg.Signer.(SchemeSigner); ok && len(g.Schemes()) > 1 {
		out, err = t.knock(ctx, reg, msg, g, at)
	} else {
		out, err = t.attempt(ctx, reg, msg, at)
		if ok && err == nil && refusedSignature(out) {
			out = t.signsNoSchemeOfTheHost(ctx, reg, g, out, at)
		}
	}
	if err != nil {
		return push.Outcome{}, err
	}
	out.Duration = time.Since(start)
	if log := t.opts.Logger; log.Enabled(ctx, slog.LevelDebug) { // the attributes cost more than the check
		log.LogAttrs(ctx, slog.LevelDebug, "herald: delivery attempt",
			slog.String("stream", reg.Stream), slog.String("registration", reg.ID), slog.String("host", reg.Host()),
			slog.String("message", msg.ID), slog.String("verdict", out.Verdict.String()), slog.Int("status", out.Status),
			slog.Duration("duration", out.Duration), slog.String("reason", out.Reason))
	}
	return out, nil
}

// NewRequest returns, unsent, the request Deliver would send for msg to
// reg.URL at at. Errors: the guard refusing the URL (wrapping ErrRefused;
// addresses behind a name are checked only at connect time), or "sign: "
// and the signer's error, redacted.
func (t *HTTP) NewRequest(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (*http.Request, error) {
	u, err := t.urls.check(t.guard, reg.URL)
	var rt *route
	if err == nil {
		rt, err = t.routes.get(reg.Config)
	}
	if err == nil {
		var req *http.Request
		if req, err = t.newRequest(ctx, u, rt.header, msg, at); err == nil {
			return req, nil
		}
	}
	return nil, fmt.Errorf("transport: %w", err)
}

// newRequest builds and signs the request for msg to u, with the
// registration's own headers.
func (t *HTTP) newRequest(ctx context.Context, u *url.URL, own http.Header, msg push.Message, at time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(msg.Body))
	if err != nil {
		return nil, err
	}
	target := *u                                       // u is shared (urlCache): copied, not parsed again
	target.Host = strings.TrimSuffix(target.Host, ":") // as http.NewRequest does
	req.URL, req.Host = &target, target.Host
	req.Header = make(http.Header, len(msg.Header)+len(own)+6) // room for what the transport and signers add
	for _, h := range [2]http.Header{own, msg.Header} {        // Endpoint.Check keeps them apart
		for k, v := range h {
			req.Header[k] = v[:len(v):len(v)] // capped, so that an Add copies it rather than writing into msg's
		}
	}
	if msg.ContentType != "" {
		req.Header.Set("Content-Type", msg.ContentType)
	}
	req.Header["User-Agent"] = userAgent
	if msg.Signer != nil {
		if err := msg.Signer.Sign(req, msg.Body, at); err != nil {
			return nil, errors.New(newRedactor(u, req.Header).String("sign: " + err.Error()))
		}
	}
	return req, nil
}

func (t *HTTP) attempt(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	u, err := t.urls.check(t.guard, reg.URL)
	if err != nil {
		return push.Outcome{Verdict: push.Permanent, Reason: err.Error()}, nil
	}
	rt, err := t.routes.get(reg.Config)
	if err != nil { // the projection parses the same config first: a store that changed it under us
		return push.Outcome{Verdict: push.Transient, Reason: err.Error()}, nil
	}
	reqCtx, cancel := context.WithTimeoutCause(ctx, t.opts.Timeout, errDeadline)
	defer cancel()
	st := &struct { // the stage of the attempt (classifyError) and the hooks that follow it, in one allocation
		stage atomic.Int32
		conn  *heardConn // a new plain connection, until its first answer (GotConn runs in Do's goroutine)
		trace httptrace.ClientTrace
	}{}
	st.trace.GetConn = func(string) { st.stage.Store(stageConnecting) }
	st.trace.GotConn = func(info httptrace.GotConnInfo) {
		st.stage.Store(stageSending)
		if info.Reused {
			return
		}
		switch c := info.Conn.(type) {
		case *heardConn: // a new plain connection
			st.conn = c
		case *tls.Conn: // whose heardConn kept ciphertext, which says nothing
			if hc, ok := c.NetConn().(*heardConn); ok {
				hc.forget()
			}
		}
	}
	st.trace.WroteRequest = func(i httptrace.WroteRequestInfo) { // an answer may come first
		if i.Err == nil { // else still sending: HTTP/2 reports the write its timeout cut
			st.stage.CompareAndSwap(stageSending, stageWaiting)
		}
	}
	st.trace.GotFirstResponseByte = func() { st.stage.Store(stageAnswering) }
	req, err := t.newRequest(httptrace.WithClientTrace(reqCtx, &st.trace), u, rt.header, msg, at)
	if err != nil {
		return push.Outcome{Verdict: push.Transient, Reason: err.Error()}, nil
	}
	resp, err := t.clientOf(rt).Do(req)
	timedOut := func() bool { return errors.Is(context.Cause(reqCtx), errDeadline) }
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, fmt.Errorf("transport: delivery to %s abandoned: %w", u.Host, ctx.Err())
		}
		stage := st.stage.Load()
		if !timedOut() {
			var answered bool
			if err, answered = heardFailure(st.conn, err); answered {
				stage = stageAnswering
			}
		}
		out := classifyError(err, timedOut(), t.opts.Timeout, stage, rt.key.proxy != "")
		out.Reason = requote(newRedactor(u, req.Header).String(out.Reason))
		return out, nil
	}
	if st.conn != nil {
		st.conn.forget() // its first answer came: what follows is net/http's to judge
	}
	out := Classify(resp.StatusCode, resp.Header, at)
	if out.Verdict == push.Accepted { // no evidence: drain for the connection's sake, no redactor
		_, _ = readBody(resp.Body, 0)
		return out, nil
	}
	red := newRedactor(u, req.Header)
	keep := store.MaxEvidenceBody // plus the longest secret: redacted before the cut, none is left half
	if len(red) > 0 {
		keep += len(red[0])
	}
	head, readErr := readBody(resp.Body, keep)
	out.Body = []byte(red.String(string(head)))
	if len(out.Body) > store.MaxEvidenceBody {
		out.Body = out.Body[:store.MaxEvidenceBody]
	}
	if out.Location != "" { // Classify cut it; redact the whole header, then cut, so no secret is left half
		loc := red.String(resp.Header.Get("Location"))
		out.Location = loc[:min(len(loc), MaxLocationBytes)]
	}
	if readErr != nil {
		words := readErr.Error()
		if timedOut() {
			words = fmt.Sprintf("timeout after %v", t.opts.Timeout)
		}
		out.Reason += "; body cut: " + words
	}
	out.Reason = red.String(out.Reason)
	return out, nil
}

// readBody reads up to MaxResponseBody bytes of body, keeping the first
// keep, discards up to MaxDrain more, and closes it. err is a failure to
// read the first MaxResponseBody bytes; a longer body is just cut.
func readBody(body io.ReadCloser, keep int) (head []byte, err error) {
	defer body.Close()
	buf := make([]byte, min(keep, MaxResponseBody))
	n, err := io.ReadFull(body, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return buf[:n], nil
	}
	if err == nil {
		_, err = io.CopyN(io.Discard, body, int64(MaxResponseBody-len(buf)))
		if err == nil {
			_, _ = io.CopyN(io.Discard, body, MaxDrain)
		} else if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	return buf[:n], err
}

// CloseIdleConnections closes the pooled connections not in use.
func (t *HTTP) CloseIdleConnections() {
	t.client.CloseIdleConnections()
	t.routes.closeIdle()
}

// String describes the transport by its options.
func (t *HTTP) String() string { return "transport.HTTP{" + t.opts.String() + "}" }

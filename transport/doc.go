// Package transport sends herald's messages over HTTP and classifies the
// answers (push.Transport), behind a network guard that keeps
// caller-supplied URLs from being turned against the network herald runs in.
//
//	t, err := transport.New(transport.Options{}) // HTTPS only, public addresses only, 15 s
//	w, err := push.NewWorker(journal, store, t, projection)
//
// One [*HTTP] is one connection pool: share it between workers.
//
// # Classification
//
// Status codes are RFC 9110 §15's; Retry-After is RFC 9110 §10.2.3
// ([ParseRetryAfter]).
//
//	answer                                        verdict
//	2xx                                           Accepted
//	410 Gone                                      Permanent: park (the receiver is gone)
//	429, 503, any answer with a valid Retry-After Transient, at the receiver's time
//	408, 425, 5xx                                 Transient
//	timeout, refused or reset connection,
//	DNS failure, TLS failure                      Transient, HostLevel
//	an answer begun that is not valid HTTP or is
//	cut short (timeouts apart); an HTTP/2 stream
//	the receiver resets or answers invalidly      Transient, the registration's
//	HTTP/2 GOAWAY closing the connection,
//	REFUSED_STREAM                                Transient, HostLevel
//	502, 503, 504 without a valid Retry-After     Transient, HostLevel
//	the registration's own proxy failing (not
//	reached, CONNECT refused, tunnel stalled or
//	reset); the receiver refusing the client
//	certificate (a TLS alert about it)            Transient, the registration's
//	3xx                                           Transient, never followed; Location in the Outcome
//	other 4xx                                     Rejected: the registration's RejectPolicy (retry,
//	                                              the default, or skip) decides
//	URL the guard refuses                         Permanent, with a reason naming the rule
//	signing failure                               Transient ("sign: …"): herald's fault
//	a request Go's client refuses unsent          Transient ("request not sent: …"): herald's fault
//	the caller's ctx ended before an answer       an error, not an Outcome: nothing is counted
//
// HostLevel failures count against the host, not the registration (README,
// "Hosts"). Once a byte of an answer came back (httptrace's
// GotFirstResponseByte), the host has answered (Outcome.Answered), and what
// is wrong with the answer is the registration's. A registration's own
// route and credentials are its own: its Endpoint.Proxy can fail in the
// host's place, and a host refusing one registration's certificate serves
// others, so neither judges the host; the host's name not resolving still
// does (herald resolves it, not the proxy), as does Options.Proxy failing,
// every registration's route. A Retry-After on a 2xx or a 410 does not
// change its verdict; the worker clamps every delay to
// [1 s, push.WithMaxRetryAfter].
//
// # Network guard
//
// Before any dial, a URL is refused (Permanent, a [*RefusedError]) for a
// scheme but https (http only with Options.AllowHTTP), userinfo, a host
// outside Options.AllowHosts ([HostPattern]), or an IPv4 host in decimal,
// octal, hex or short form (2130706433, 0x7f.1, 0177.0.0.1, 127.1), which
// some resolvers turn into addresses. At connect time, after DNS, every
// address [CheckAddress] refuses is refused, so a name that resolves (or
// rebinds) to a private address is too; a host is refused only when none of
// its addresses is allowed. Redirects are never followed; no environment
// proxy (HTTP_PROXY) is used.
//
// # Egress proxy
//
// With Options.Proxy, or a registration's Endpoint.Proxy, requests go
// through an HTTP CONNECT proxy to the checked address literally
// ("CONNECT 203.0.113.7:443"), so a name cannot rebind between check and
// connect (README, "Endpoint settings").
//
// # Signature schemes
//
// A message whose Signer is a [SchemeSigner] of two schemes or more (an
// ActivityPub delivery: RFC 9421, then draft-cavage) is signed in the
// first; when the host refuses the signature (401, 403, or a 400 whose body
// says "signature"), Deliver signs the same message in the next scheme and
// sends it at once, within the same attempt: the refusal is not the
// Outcome, counts no attempt and waits no backoff. The scheme the host
// accepted after a refusal is kept in Options.Schemes ([SchemeMemory]) and
// used alone for that host until [SchemeRecheck]. When every scheme is
// refused, the Outcome is the last refusal, its Reason naming the schemes
// refused before; nothing is remembered.
//
// # Secrets
//
// Request header values (Authorization, tokens, signatures), the URL's
// query and long path segments never appear in an Outcome's Reason, Body or
// Location ("[redacted]", even when a receiver echoes them), nor in errors
// or logs, which name the host only.
package transport

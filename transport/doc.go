// Package transport sends herald's messages over HTTP and classifies the
// answers: it implements push.Transport. It also holds the network guard
// that keeps caller-supplied URLs from being turned against the network
// herald runs in.
//
// # Use
//
//	t, err := transport.New(transport.Options{}) // HTTPS only, public addresses only, 15 s
//	w, err := push.NewWorker(journal, store, t, projection)
//
// One *HTTP holds one connection pool (keep-alive, MaxIdleConnsPerHost per
// host, MaxIdleConns in all); share it between workers. [NoopTransport]
// accepts everything without sending, for dry runs.
//
// # A request
//
// Deliver POSTs the message body to the registration's URL with its
// Content-Type, its headers and User-Agent herald/<version>, then lets the
// message's Signer sign the final request with the sweep's instant, on
// every attempt. Redirects are never followed. One attempt (dial, TLS,
// request, response headers, body) is bounded by Options.Timeout (15 s).
// The body is read up to [MaxResponseBody] (64 KiB), drained up to
// [MaxDrain] (16 MiB) so the connection is reused, then closed; the first
// 512 bytes of a failed answer are kept, redacted, as evidence (a success
// keeps nothing: the cursor records it).
//
// # Classification
//
// Status codes are those of RFC 9110 §15; Retry-After is RFC 9110 §10.2.3
// (see [ParseRetryAfter]).
//
//	answer                                        verdict
//	2xx                                           Accepted
//	410 Gone                                      Permanent: park (the receiver is gone)
//	429, 503, any answer with a valid Retry-After Transient, at the receiver's time
//	408, 425, 5xx                                 Transient
//	timeout, refused or reset connection,
//	DNS failure, TLS failure                      Transient, HostLevel
//	502, 503, 504 without a valid Retry-After     Transient, HostLevel
//	3xx                                           Transient, never followed; Location in the Outcome
//	other 4xx                                     Rejected: the registration's RejectPolicy (retry,
//	                                              the default, or skip) decides, not the transport
//	URL the guard refuses (scheme, allowlist,
//	private or special address)                   Permanent, with a reason naming the rule
//	signing failure                               Transient ("sign: …"): herald's fault
//	the caller's ctx ended before an answer       an error, not an Outcome: nothing is counted
//
// HostLevel marks the failures that say nothing about the record: they
// count against the host, not the registration (push.HostStore; README,
// "Hosts").
//
// A Retry-After on a 2xx or a 410 does not change its verdict. An
// HTTP-date is turned into a delay against the caller's instant at, never
// the wall clock; a date in the past gives a zero delay; garbage is
// ignored; absurd values are clamped to [RetryAfterCeiling]. The worker
// clamps the delay again to [1 s, MaxRetryAfter], so no answer makes herald
// retry in a hot loop.
//
// # Network guard
//
// herald posts to URLs that strangers supply (an A2A client's webhook, a
// remote inbox), so the transport refuses, with a Permanent outcome:
//
//   - any scheme but https (http only with Options.AllowHTTP), and URLs
//     with userinfo;
//   - hosts outside Options.AllowHosts, when it is set ([HostPattern]);
//   - IPv4 hosts in decimal, octal, hex or short form (2130706433,
//     0x7f.1, 0177.0.0.1, 127.1), which some resolvers turn into
//     addresses;
//   - at connect time, in the dialer's Control hook, every address in a
//     range [CheckAddress] refuses: loopback, RFC 1918, unique local and
//     carrier-grade NAT (opened only by Options.AllowPrivateNetwork), and
//     always link-local (169.254.169.254, the cloud metadata service),
//     unspecified, multicast, reserved, broadcast, benchmarking,
//     documentation, NAT64, 6to4 and Teredo ranges, and the IPv4-mapped
//     IPv6 forms of all of them.
//
// The connect-time check is the real guard: it sees the address the socket
// is about to connect to, after DNS, so a name that resolves (or rebinds)
// to a private address is refused too. A host with several addresses is
// tried address by address; refused ones are skipped, and only a host with
// no allowed address is refused. No proxy is ever used.
//
// # Secrets
//
// Request header values (Authorization, tokens, signatures), the URL's
// query and long path segments never appear in an Outcome's Reason, Body or
// Location (they are replaced by "[redacted]" even when a receiver echoes
// them), nor in errors or logs, which name the host only. Options print a
// summary for every fmt verb.
package transport

package transport

import (
	"cmp"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/idna"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Endpoint is a registration's own transport settings. Every projection's
// config embeds it, so its keys sit beside the projection's in
// push.Registration.Config, stored (and sealed) with it. The zero Endpoint
// changes nothing. Only JSON encoding shows its values.
type Endpoint struct {
	// Headers are added to every request: at most MaxHeaders, names HTTP
	// tokens, values visible ASCII (tab and inner spaces allowed) of at most
	// MaxHeaderValueBytes. The values are treated as secrets (redacted from
	// evidence). Check refuses ReservedHeaders and the projection's own.
	Headers map[string]string `json:"headers,omitempty"`
	// ClientCert and ClientKey, both or neither, are a PEM certificate
	// (chain, leaf first) and its PEM private key, presented to a receiver
	// that asks for a client certificate (mTLS).
	ClientCert string `json:"client_cert,omitempty"`
	ClientKey  string `json:"client_key,omitempty"`
	// Proxy is an HTTP CONNECT proxy, http://[user:password@]host:port,
	// for this registration's requests in place of Options.Proxy (package
	// doc, "Egress proxy").
	Proxy string `json:"proxy,omitempty"`
}

// Bounds of Endpoint.Headers.
const (
	MaxHeaders          = 32
	MaxHeaderNameBytes  = 256  // well past any header a receiver defines
	MaxHeaderValueBytes = 4096 // receivers commonly refuse header lines above 8 KiB
)

// MaxRSAKeyBits bounds an RSA key herald signs with (a client
// certificate's; activitypub's keys): a signature's cost grows with the
// cube of the key's size (2048 bits: 2 ms of CPU; 8192: 0.17 s; 16384: over
// 1 s), and a registration's key would take that from every other's
// deliveries. crypto/tls bounds a peer's key at 8192 bits for that reason.
const MaxRSAKeyBits = 8192

// ReservedHeaders are refused in Endpoint.Headers whatever the projection:
// hop-by-hop headers (RFC 9110 §7.6.1), what the transport sets (Host,
// Content-Length, Content-Type, User-Agent), trace context (push), and
// herald's own Herald- headers. A name ending in '*' is a prefix. Each
// projection adds the headers it sets (its Config's Validate).
var ReservedHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-*", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
	"Host", "Content-Length", "Content-Type", "Content-Encoding", "User-Agent",
	"Traceparent", "Tracestate", "Herald-*",
}

// String describes the settings that are set, without a value, after
// "; " so that a config's String can end with it: "; headers [X-Tenant]
// (values redacted), client certificate, proxy". It is "" when none is.
func (e Endpoint) String() string {
	var parts []string
	if len(e.Headers) > 0 {
		parts = append(parts, fmt.Sprintf("headers %v (values redacted)", e.HeaderNames()))
	}
	if e.ClientCert != "" || e.ClientKey != "" {
		parts = append(parts, "client certificate")
	}
	if e.Proxy != "" {
		parts = append(parts, "proxy")
	}
	if parts == nil {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// HeaderNames returns the canonical names of e.Headers, sorted: what may be
// shown of them.
func (e Endpoint) HeaderNames() []string {
	out := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		out = append(out, http.CanonicalHeaderKey(k))
	}
	slices.Sort(out)
	return out
}

// Check validates e, refusing in Headers ReservedHeaders and reserved (the
// projection's own headers; '*' ends a prefix). It does not judge the
// client certificate's dates (ValidAt does). Errors wrap journal.ErrInvalid,
// name the key ("config.headers[X-Tenant]", "config.client_key") and never
// quote a value.
func (e Endpoint) Check(reserved ...string) error {
	var errs []error
	if len(e.Headers) > MaxHeaders {
		errs = append(errs, journal.Invalid("config.headers", "has %d headers, more than %d", len(e.Headers), MaxHeaders))
	}
	seen := make(map[string]string, len(e.Headers))
	for _, name := range slices.Sorted(maps.Keys(e.Headers)) {
		if err := checkHeader(name, e.Headers[name], reserved); err != nil {
			errs = append(errs, err)
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if other, dup := seen[canon]; dup {
			errs = append(errs, journal.Invalid(headerField(name), "repeats config.headers[%s] (header names ignore case)", other))
		}
		seen[canon] = name
	}
	if _, err := e.certificate(); err != nil {
		errs = append(errs, err)
	}
	if e.Proxy != "" {
		if _, err := ParseProxy("config.proxy", e.Proxy); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// headerField names one header in errors; a name that is not a token is
// quoted, cut to 64 bytes.
func headerField(name string) string {
	if httpguts.ValidHeaderFieldName(name) && len(name) <= 64 {
		return "config.headers[" + name + "]"
	}
	return fmt.Sprintf("config.headers[%q]", name[:min(len(name), 64)])
}

func checkHeader(name, value string, reserved []string) error {
	field := headerField(name)
	if len(name) > MaxHeaderNameBytes {
		return journal.Invalid(field, "is a header name longer than %d bytes (%d)", MaxHeaderNameBytes, len(name))
	}
	if !httpguts.ValidHeaderFieldName(name) {
		return journal.Invalid(field, "is not a valid header name: letters, digits and !#$%%&'*+-.^_`|~ only (no space, colon, CR or LF)")
	}
	canon := http.CanonicalHeaderKey(name)
	for _, r := range [][]string{ReservedHeaders, reserved} {
		for _, res := range r {
			if prefix, ok := strings.CutSuffix(res, "*"); ok && strings.HasPrefix(canon, http.CanonicalHeaderKey(prefix)) ||
				canon == http.CanonicalHeaderKey(res) {
				return journal.Invalid(field, "is a header herald or the projection sets, or a hop-by-hop one (%s): it cannot be set per registration", res)
			}
		}
	}
	switch {
	case len(value) > MaxHeaderValueBytes:
		return journal.Invalid(field, "has a value longer than %d bytes (%d)", MaxHeaderValueBytes, len(value))
	case !httpguts.ValidHeaderFieldValue(value) || strings.ContainsFunc(value, func(r rune) bool { return r >= 0x7f }):
		return journal.Invalid(field, "has a value with a CR, LF or other control or non-ASCII character")
	case strings.Trim(value, " \t") != value:
		return journal.Invalid(field, "has a value that starts or ends with a space, which receivers strip")
	}
	return nil
}

// encryptedPEM reports whether the first PEM block of s is an encrypted
// key (PKCS#8's ENCRYPTED PRIVATE KEY, or OpenSSL's legacy Proc-Type),
// which tls.X509KeyPair would call merely unparsable.
func encryptedPEM(s string) bool {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return false
	}
	_, legacy := block.Headers["Proc-Type"]
	return legacy || block.Type == "ENCRYPTED PRIVATE KEY"
}

// certificate parses ClientCert and ClientKey: nil when neither is set.
func (e Endpoint) certificate() (*tls.Certificate, error) {
	switch {
	case e.ClientCert == "" && e.ClientKey == "":
		return nil, nil
	case e.ClientKey == "":
		return nil, journal.Invalid("config.client_key", "is missing: a client certificate needs its private key")
	case e.ClientCert == "":
		return nil, journal.Invalid("config.client_cert", "is missing: a client key needs its certificate")
	}
	if encryptedPEM(e.ClientKey) {
		return nil, journal.Invalid("config.client_key", "is encrypted: give it decrypted (openssl pkey -in key.pem -out plain.pem); herald seals it at rest")
	}
	cert, err := tls.X509KeyPair([]byte(e.ClientCert), []byte(e.ClientKey))
	if err != nil {
		// The error names which PEM is wrong and never repeats a key.
		field := "config.client_key"
		if strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "private key does not match") {
			field = "config.client_cert"
		}
		return nil, journal.Invalid(field, "%s", strings.TrimPrefix(err.Error(), "tls: "))
	}
	if k, ok := cert.PrivateKey.(*rsa.PrivateKey); ok && k.N.BitLen() > MaxRSAKeyBits {
		return nil, journal.Invalid("config.client_key", "is an RSA key of %d bits: at most %d bits", k.N.BitLen(), MaxRSAKeyBits)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, journal.Invalid("config.client_cert", "cannot be parsed: %v", err)
		}
	}
	return &cert, nil
}

// ValidAt refuses a client certificate that is expired or not yet valid at
// now. Registering calls it with the registering process's wall clock
// (the CLI's, the daemon's API, Worker.Register's caller); sweeps never do:
// a certificate that expires later is refused by the receiver, and that
// answer is evidence.
func (e Endpoint) ValidAt(now time.Time) error {
	cert, err := e.certificate()
	if err != nil || cert == nil {
		return err
	}
	switch leaf := cert.Leaf; {
	case now.After(leaf.NotAfter):
		return journal.Invalid("config.client_cert", "expired at %s (checked against this machine's clock, %s)",
			leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return journal.Invalid("config.client_cert", "is not valid before %s (checked against this machine's clock, %s)",
			leaf.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// EndpointOf reads the Endpoint keys of a registration's config, ignoring
// the projection's. Errors wrap journal.ErrInvalid.
func EndpointOf(config []byte) (Endpoint, error) {
	var e Endpoint
	if len(config) == 0 {
		return e, nil
	}
	if err := json.Unmarshal(config, &e); err != nil {
		return Endpoint{}, journal.Invalid("config", "has endpoint settings (headers, client_cert, client_key, proxy) of the wrong type")
	}
	return e, nil
}

// proxy is a parsed HTTP CONNECT proxy.
type proxy struct {
	addr   string   // host:port
	auth   string   // the Proxy-Authorization value, "" for none
	redact redactor // its credentials, which a proxy's answer may echo
}

// ParseProxy checks raw, an HTTP CONNECT proxy's URL, as field (a flag or
// config key names it in errors, which never show a password):
// http://[user:password@]host[:port], the port 80 when left out, a
// non-ASCII host as IDNA writes it (xn--…). An https proxy (TLS to the
// proxy) is not supported.
func ParseProxy(field, raw string) (*url.URL, error) {
	if len(raw) > store.MaxURLBytes {
		return nil, journal.Invalid(field, "is longer than %d bytes (%d)", store.MaxURLBytes, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, journal.Invalid(field, "cannot be parsed as a URL (http://[user:password@]host:port)")
	}
	switch {
	case u.Scheme != "http":
		return nil, journal.Invalid(field, "has scheme %q: herald speaks to its proxy in plain HTTP CONNECT (http://host:port); the tunnel carries TLS", u.Scheme)
	case u.Hostname() == "":
		return nil, journal.Invalid(field, "has no host")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return nil, journal.Invalid(field, "has a path, query or fragment: give http://[user:password@]host:port")
	}
	if n, err := strconv.Atoi(u.Port()); u.Port() != "" && (err != nil || n < 1 || n > 65535) {
		return nil, journal.Invalid(field, "has port %s: it must be 1 to 65535", journal.Shown(u.Port()))
	}
	// The proxy's name is dialled as it stands, with no IDNA mapping (the
	// destination's gets one): a non-ASCII name is looked up as punycode.
	host := u.Hostname()
	if strings.IndexFunc(host, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
		if host, err = idna.Lookup.ToASCII(host); err != nil {
			return nil, journal.Invalid(field, "has a host that is no domain name, as IDNA looks names up (%v)", err)
		}
	}
	u.Host = net.JoinHostPort(host, cmp.Or(u.Port(), "80"))
	return u, nil
}

func proxyOf(u *url.URL) *proxy {
	if u == nil {
		return nil
	}
	p := &proxy{addr: u.Host}
	if u.User != nil {
		req := http.Request{Header: http.Header{}}
		pw, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pw)
		p.auth = req.Header.Get("Authorization")
		p.redact = newRedactor(nil, http.Header{"Proxy-Authorization": {p.auth, pw, u.User.Username() + ":" + pw}})
	}
	return p
}

// Format prints the proxy's address only, for every verb.
func (p *proxy) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "proxy "+p.addr) }

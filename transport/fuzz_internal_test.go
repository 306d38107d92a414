package transport

import (
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzCheckURL: a registration's URL is outside input, and checkURL is the
// guard's first stage (before any request is built). It never panics; what
// it lets through is https (or http when allowed) with a host that is not
// a refused IP literal, not an IPv4 address in a non-canonical form, and in
// the allowlist when there is one; a refusal wraps ErrRefused (or says the
// URL cannot be parsed) and never repeats the URL's path or query.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://hooks.example.com/x", "http://hooks.example.com/x", "https://127.0.0.1:8443/x", "https://[::ffff:127.0.0.1]/x",
		"https://2130706433/", "https://0177.0.0.1/", "https://0x7f.1/", "https://127.1/", "https://169.254.169.254/latest/meta-data/",
		"https://[fe80::1%25eth0]/", "https://user:pw@hooks.example.com/", "ftp://hooks.example.com/", "https://HOOKS.example.com./x",
		"https://evil.example.org/x?token=secret-token-0123", "https:///x", "https://[::1/", "https://1.2.3.4.5/", "https://a.0x/",
	} {
		f.Add(seed, false, false, false)
		f.Add(seed, true, true, true)
	}
	f.Fuzz(func(t *testing.T, raw string, allowHTTP, allowPrivate, allowlisted bool) {
		g := &guard{allowHTTP: allowHTTP, allowPrivate: allowPrivate}
		if allowlisted {
			tr, err := New(Options{AllowHosts: []string{"*.example.com", "203.0.113.7"}})
			if err != nil {
				t.Fatal(err)
			}
			g.allowlist = tr.guard.allowlist
		}
		u, err := g.checkURL(raw)
		if err != nil {
			var refused *RefusedError
			if !errors.As(err, &refused) && err.Error() != "url: cannot be parsed" {
				t.Fatalf("checkURL(%q) = %v: neither a refusal nor a parse error", raw, err)
			}
			if p, perr := url.Parse(raw); perr == nil {
				for _, part := range []string{p.RawQuery, p.EscapedPath()} {
					if len(part) >= 12 && !strings.Contains(p.Host, part) && strings.Contains(err.Error(), part) {
						t.Fatalf("checkURL(%q): the refusal %q repeats the URL's path or query", raw, err)
					}
				}
			}
			return
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && allowHTTP) {
			t.Fatalf("checkURL(%q) lets scheme %q through", raw, u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("checkURL(%q) lets userinfo through", raw)
		}
		host := normalizeHost(u.Hostname())
		if host == "" {
			t.Fatalf("checkURL(%q) lets an empty host through", raw)
		}
		if addr, err := netip.ParseAddr(host); err == nil {
			if CheckAddress(addr, allowPrivate) != nil {
				t.Fatalf("checkURL(%q) lets %s through", raw, addr)
			}
		} else if endsInNumber(host) {
			t.Fatalf("checkURL(%q) lets the numeric host %q through", raw, host)
		}
		if g.allowlist != nil && !slices.ContainsFunc(g.allowlist, func(p HostPattern) bool { return p.Match(host) }) {
			t.Fatalf("checkURL(%q) lets %q through, outside the allowlist", raw, host)
		}
	})
}

// FuzzRedact: a receiver's answer is outside input, and it may echo what
// it was sent. After redaction no occurrence of a secret the attempt sent
// (a header value or a part of one, the query or a value of it, a long
// path segment) is left outside the "[redacted]" markers, however the
// answer interleaves them.
func FuzzRedact(f *testing.F) {
	f.Add("Bearer tok-0123456789abcdef", "sig-0123456789", "https://h.example/hooks/0123456789abcdef0123?k=secret-value-1", []byte("you sent Bearer tok-0123456789abcdef"))
	f.Add("aaaaaaaaab", "aaaaaaaa", "https://h.example/", []byte("aaaaaaaaaaaaaaaab"))
	f.Add("x[redacted]y0000", "d]y0000000", "https://h.example/?q=[redacted]", []byte("[redacted]y0000000"))
	f.Fuzz(func(t *testing.T, auth, sig, rawURL string, body []byte) {
		h := http.Header{}
		h.Set("Authorization", auth)
		h.Set("Webhook-Signature", sig)
		h.Set("Content-Type", "application/json")
		u, err := url.Parse(rawURL)
		if err != nil {
			u = nil
		}
		r := newRedactor(u, h)
		// The answer echoes everything, among the receiver's own bytes.
		in := append(append(append([]byte{}, body...), auth...), body...)
		in = append(append(in, sig...), rawURL...)
		out := []byte(r.String(string(in)))
		covered := make([]bool, len(out))
		for i := 0; ; {
			j := bytes.Index(out[i:], []byte(redacted))
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(redacted); k++ {
				covered[k] = true
			}
			i += j + 1
		}
		for _, secret := range r {
			for i := 0; ; {
				j := bytes.Index(out[i:], []byte(secret))
				if j < 0 {
					break
				}
				start, end := i+j, i+j+len(secret)
				touches := false
				for k := start; k < end; k++ {
					touches = touches || covered[k]
				}
				if !touches {
					t.Fatalf("%q is left in the answer %q (redacted: %q)", secret, in, out)
				}
				i = start + 1
			}
		}
	})
}

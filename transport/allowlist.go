package transport

import (
	"net/netip"
	"strings"

	"github.com/heraldpush/herald/journal"
)

// HostPattern is one entry of a host allowlist: an exact host name
// ("hooks.example.com"), an IP address ("203.0.113.7", "2001:db8::1"), or
// "*.example.com", which matches every name below example.com at any depth
// but not example.com itself. Matching ignores ASCII case and one trailing
// dot; internationalized names are written in their xn-- (punycode) form.
// The zero HostPattern matches nothing.
type HostPattern struct {
	name     string     // lowercase, no trailing dot; for a wildcard, the suffix without "*."
	wildcard bool       // "*.name"
	addr     netip.Addr // valid for an IP address pattern
}

// ParseHostPattern parses one allowlist entry. Errors wrap journal.ErrInvalid
// and say what is wrong: a URL, port or path, a bare "*", a wildcard that
// is not the whole leftmost label, an empty label or one over 63 bytes or
// with a byte that is not a letter, digit, '-' or '_', a name over 253
// bytes, non-ASCII, or a non-canonical IP address.
func ParseHostPattern(s string) (HostPattern, error) {
	bad := func(format string, args ...any) (HostPattern, error) {
		return HostPattern{}, journal.Invalid("host pattern", "%q "+format, append([]any{s}, args...)...)
	}
	switch {
	case s == "":
		return HostPattern{}, journal.Invalid("host pattern", "is empty")
	case s == "*" || s == "*.":
		return bad("would allow every host; leave the allowlist empty to allow all public hosts")
	case strings.Contains(s, "://"):
		return bad("is a URL; give the host name only (hooks.example.com)")
	case strings.ContainsAny(s, "/?#@"):
		return bad("has a path, query or userinfo; give the host name only")
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] >= 0x80:
			return bad("is not ASCII; write internationalized names in their xn-- (punycode) form")
		case s[i] <= 0x20 || s[i] == 0x7f:
			return bad("has a space or control character at byte %d", i)
		}
	}
	lower := strings.ToLower(s)
	if ip := strings.TrimSuffix(strings.TrimPrefix(lower, "["), "]"); strings.Contains(ip, ":") {
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" {
			return bad("has a port or is not an IP address; ports are not matched, give the host only")
		}
		return HostPattern{addr: addr}, nil
	}
	if addr, err := netip.ParseAddr(lower); err == nil {
		return HostPattern{addr: addr}, nil
	}
	name, wildcard := strings.CutPrefix(lower, "*.")
	name = strings.TrimSuffix(name, ".")
	switch {
	case strings.Contains(name, "*"):
		return bad("has a wildcard that is not the whole leftmost label; only *.example.com is supported")
	case name == "":
		return bad("has no name after the wildcard")
	case len(name) > 253:
		return bad("is longer than 253 bytes")
	case endsInNumber(name):
		return bad("ends in a number, so it is an IP address to URL parsers, but not a canonical one (a.b.c.d)")
	}
	for _, label := range strings.Split(name, ".") {
		switch rest := strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyz0123456789-_"); {
		case label == "":
			return bad("has an empty label")
		case len(label) > 63:
			return bad("has a label longer than 63 bytes")
		case label[0] == '-' || label[len(label)-1] == '-':
			return bad("has a label that starts or ends with '-'")
		case rest != "":
			return bad("has %q, which is not a letter, digit, '-' or '_'", rest[0])
		}
	}
	return HostPattern{name: name, wildcard: wildcard}, nil
}

// Match reports whether host (a URL's host name, without port or brackets)
// matches the pattern.
func (p HostPattern) Match(host string) bool {
	if p.addr.IsValid() {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		return err == nil && a.WithZone("") == p.addr
	}
	if p.name == "" {
		return false
	}
	host = normalizeHost(host)
	if !p.wildcard {
		return host == p.name
	}
	return len(host) > len(p.name)+1 && strings.HasSuffix(host, p.name) && host[len(host)-len(p.name)-1] == '.'
}

// String returns the pattern in its canonical form.
func (p HostPattern) String() string {
	switch {
	case p.addr.IsValid():
		return p.addr.String()
	case p.wildcard:
		return "*." + p.name
	}
	return p.name
}

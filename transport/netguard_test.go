package transport_test

import (
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// Every range the guard refuses, in both families and in IPv4-mapped IPv6
// form, with the rule it names; and what AllowPrivateNetwork opens.
func TestCheckAddressRanges(t *testing.T) {
	cases := []struct {
		addr    string
		rule    string // "" means allowed
		private bool   // opened by AllowPrivateNetwork
	}{
		{"8.8.8.8", "", false},
		{"1.1.1.1", "", false},
		{"2606:4700:4700::1111", "", false},
		{"::ffff:8.8.8.8", "", false},

		{"127.0.0.1", "127.0.0.0/8 (loopback)", true},
		{"127.255.255.254", "127.0.0.0/8 (loopback)", true},
		{"::1", "::1/128 (loopback)", true},
		{"10.1.2.3", "10.0.0.0/8 (RFC 1918 private)", true},
		{"172.16.0.1", "172.16.0.0/12 (RFC 1918 private)", true},
		{"172.31.255.255", "172.16.0.0/12 (RFC 1918 private)", true},
		{"192.168.1.1", "192.168.0.0/16 (RFC 1918 private)", true},
		{"100.64.0.1", "100.64.0.0/10 (shared address space, carrier-grade NAT (RFC 6598))", true},
		{"100.127.255.255", "100.64.0.0/10", true},
		{"fd00::1", "fc00::/7 (unique local (RFC 4193))", true},
		{"fc00::1", "fc00::/7", true},

		{"169.254.169.254", "169.254.0.0/16 (link-local, incl. cloud metadata 169.254.169.254 (RFC 3927))", false},
		{"169.254.0.1", "169.254.0.0/16", false},
		{"fe80::1", "fe80::/10 (link-local", false},
		{"fe80::1%eth0", "fe80::/10", false},
		{"0.0.0.0", "0.0.0.0/8", false},
		{"0.1.2.3", "0.0.0.0/8", false},
		{"::", "::/128 (unspecified)", false},
		{"224.0.0.1", "224.0.0.0/4 (multicast", false},
		{"239.255.255.250", "224.0.0.0/4", false},
		{"ff02::1", "ff00::/8 (multicast", false},
		{"240.0.0.1", "240.0.0.0/4 (reserved", false},
		{"255.255.255.255", "240.0.0.0/4", false},
		{"192.0.0.8", "192.0.0.0/24", false},
		{"198.18.0.1", "198.18.0.0/15 (benchmarking", false},
		{"198.19.255.255", "198.18.0.0/15", false},
		{"192.0.2.1", "192.0.2.0/24", false},
		{"64:ff9b::a01:203", "64:ff9b::/96 (NAT64", false},
		{"64:ff9b::808:808", "64:ff9b::/96", false},
		{"2002:a01:203::1", "2002::/16 (6to4", false},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/32 (Teredo", false},
		{"::127.0.0.1", "::/96 (IPv4-compatible", false},
		{"fec0::1", "fec0::/10", false},
		{"2001:db8::1", "2001:db8::/32", false},

		// IPv4-mapped IPv6 forms are judged as the IPv4 address they carry.
		{"::ffff:127.0.0.1", "(IPv4-mapped 127.0.0.1) is in 127.0.0.0/8 (loopback)", true},
		{"::ffff:10.1.2.3", "(IPv4-mapped 10.1.2.3) is in 10.0.0.0/8", true},
		{"::ffff:169.254.169.254", "169.254.0.0/16", false},
		{"::ffff:0.0.0.0", "0.0.0.0/8", false},
		{"::ffff:100.64.0.1", "100.64.0.0/10", true},
		{"::ffff:192.168.0.1", "192.168.0.0/16", true},
		{"::ffff:172.16.0.1", "172.16.0.0/12", true},
		{"::ffff:224.0.0.1", "224.0.0.0/4", false},
		{"::ffff:255.255.255.255", "240.0.0.0/4", false},
		{"::ffff:198.18.0.1", "198.18.0.0/15", false},
		{"::ffff:192.0.0.1", "192.0.0.0/24", false},
	}
	for _, c := range cases {
		addr := netip.MustParseAddr(c.addr)
		for _, allowPrivate := range []bool{false, true} {
			err := transport.CheckAddress(addr, allowPrivate)
			allowed := c.rule == "" || (c.private && allowPrivate)
			if allowed {
				if err != nil {
					t.Errorf("CheckAddress(%s, allowPrivate=%t) = %v, want allowed", c.addr, allowPrivate, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("CheckAddress(%s, allowPrivate=%t) = nil, want refused by %s", c.addr, allowPrivate, c.rule)
				continue
			}
			var refused *transport.RefusedError
			if !errors.As(err, &refused) || !errors.Is(err, transport.ErrRefused) {
				t.Errorf("CheckAddress(%s) = %T, want a *RefusedError wrapping ErrRefused", c.addr, err)
			}
			mustContain(t, "CheckAddress("+c.addr+")", err.Error(), c.rule)
			if !strings.HasPrefix(err.Error(), "netguard: ") {
				t.Errorf("CheckAddress(%s) = %q, want it to start with netguard:", c.addr, err)
			}
		}
	}
	if err := transport.CheckAddress(netip.Addr{}, true); err == nil {
		t.Error("CheckAddress(invalid) = nil, want refused")
	}
}

// A name that resolves to loopback or to the metadata service is refused
// when the socket is about to connect, after DNS: the server behind the
// loopback address never sees a request.
func TestNetguardChecksResolvedAddressAtDialTime(t *testing.T) {
	srv := newCounter(t, nil)
	dns := &fakeDNS{table: map[string][]string{
		"loopback.test": {"127.0.0.1"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"private.test":  {"10.1.2.3"},
		"mixed.test":    {"169.254.169.254", "127.0.0.1"},
	}}
	opts := transport.Options{AllowHTTP: true, Resolver: dns}
	tr := newTransport(t, opts)
	for host, want := range map[string]string{
		"loopback.test": "netguard: 127.0.0.1 is in 127.0.0.0/8 (loopback); herald run/sweep --allow-private-network (Options.AllowPrivateNetwork) opts in",
		"mapped.test":   "netguard: 127.0.0.1 is in 127.0.0.0/8 (loopback)",
		"metadata.test": "netguard: 169.254.169.254 is in 169.254.0.0/16 (link-local, incl. cloud metadata 169.254.169.254 (RFC 3927)); no option lifts it",
		"private.test":  "netguard: 10.1.2.3 is in 10.0.0.0/8 (RFC 1918 private)",
		"mixed.test":    "netguard: 169.254.169.254 is in 169.254.0.0/16",
	} {
		out := deliver(t, tr, "http://"+host+":"+srv.port()+"/hook", message("{}"))
		if out.Verdict != push.Permanent || out.Status != 0 {
			t.Errorf("%s: got %s, want permanent", host, describe(out))
		}
		mustContain(t, host+" Reason", out.Reason, want)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests through names the guard must refuse", n)
	}
	if q := dns.questions(); len(q) != 5 {
		t.Errorf("resolver was asked %v: the check must come after DNS, at dial time", q)
	}

	// The same names with AllowPrivateNetwork: loopback is reached (the
	// refused metadata address of mixed.test is skipped for the next one),
	// but the metadata service stays refused.
	opts.AllowPrivateNetwork = true
	open := newTransport(t, opts)
	for _, host := range []string{"loopback.test", "mapped.test", "mixed.test"} {
		if out := deliver(t, open, "http://"+host+":"+srv.port()+"/hook", message("{}")); out.Verdict != push.Accepted {
			t.Errorf("%s with AllowPrivateNetwork: got %s, want accepted", host, describe(out))
		}
	}
	if out := deliver(t, open, "http://metadata.test:"+srv.port()+"/", message("{}")); out.Verdict != push.Permanent {
		t.Errorf("metadata.test with AllowPrivateNetwork: got %s, want permanent", describe(out))
	}
	if n := srv.hits.Load(); n != 3 {
		t.Errorf("server got %d requests, want 3", n)
	}
}

// A receiver answering 302 to the metadata service, or to another server,
// gets its 3xx recorded and is never followed.
func TestRedirectIsNeverFollowed(t *testing.T) {
	target := newCounter(t, nil)
	for _, location := range []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		target.URL + "/steal",
	} {
		src := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, location, http.StatusFound)
		})
		out := deliver(t, newTransport(t, loopbackOptions()), src.URL+"/hook", message("{}"))
		if out.Verdict != push.Transient || out.Status != http.StatusFound || out.Location != location {
			t.Errorf("302 to %s: got %s, want transient 302 with the Location", location, describe(out))
		}
		mustContain(t, "Reason", out.Reason, "redirect not followed")
	}
	if n := target.hits.Load(); n != 0 {
		t.Fatalf("redirect target got %d requests, want 0", n)
	}
}

// Plain http is refused before any dial unless AllowHTTP.
func TestPlainHTTPRefusedByDefault(t *testing.T) {
	srv := newCounter(t, nil)
	for _, opts := range []transport.Options{{}, {AllowPrivateNetwork: true}} {
		out := deliver(t, newTransport(t, opts), srv.URL+"/hook", message("{}"))
		if out.Verdict != push.Permanent || out.Reason != "netguard: scheme http is not allowed: https only; herald run/sweep --allow-http (Options.AllowHTTP) opts in" {
			t.Errorf("%v: got %s", opts, describe(out))
		}
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server got %d requests, want 0", n)
	}
}

// URLs the guard refuses without dialing or asking DNS: other schemes,
// userinfo, IP literals in special ranges, and IPv4 hosts in the
// non-canonical forms some resolvers accept (inet_aton reads 2130706433,
// 0x7f.1 and 0177.0.0.1 as 127.0.0.1).
func TestURLRefusedBeforeDial(t *testing.T) {
	dns := &fakeDNS{}
	tr := newTransport(t, transport.Options{AllowHTTP: true, Resolver: dns})
	for url, want := range map[string]string{
		"ftp://example.com/inbox":              `netguard: scheme "ftp" is not allowed`,
		"gopher://example.com/":                `netguard: scheme "gopher"`,
		"https://user:pw@example.com/":         "netguard: url has userinfo",
		"https://127.0.0.1/":                   "netguard: 127.0.0.1 is in 127.0.0.0/8",
		"https://[::1]:8443/":                  "netguard: ::1 is in ::1/128",
		"https://[::ffff:127.0.0.1]/":          "netguard: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1) is in 127.0.0.0/8",
		"https://[::ffff:7f00:1]/":             "(IPv4-mapped 127.0.0.1) is in 127.0.0.0/8",
		"https://169.254.169.254/latest/":      "netguard: 169.254.169.254 is in 169.254.0.0/16",
		"https://[fe80::1%25eth0]/":            "netguard: fe80::1 is in fe80::/10",
		"https://0.0.0.0/":                     "netguard: 0.0.0.0 is in 0.0.0.0/8",
		"https://[::]/":                        "netguard: :: is in ::/128",
		"https://2130706433/":                  "netguard: host 2130706433 looks like an IPv4 address in a non-canonical",
		"https://0x7f000001/":                  "netguard: host 0x7f000001 looks like",
		"https://0x7f.1/":                      "netguard: host 0x7f.1 looks like",
		"https://0177.0.0.1/":                  "netguard: host 0177.0.0.1 looks like",
		"https://127.1/":                       "netguard: host 127.1 looks like",
		"https://017700000001/":                "netguard: host 017700000001 looks like",
		"https://1.2.3.4.5/":                   "netguard: host 1.2.3.4.5 looks like",
		"https://example.0x10./":               "netguard: host example.0x10 looks like",
		"https://10.1.2.3./":                   "netguard: 10.1.2.3 is in 10.0.0.0/8",
		"https://[64:ff9b::a9fe:a9fe]/hook":    "64:ff9b::/96 (NAT64",
		"https://[2002:a9fe:a9fe::]/":          "2002::/16 (6to4",
		"https://198.18.0.1/":                  "198.18.0.0/15",
		"https://224.0.0.1/":                   "224.0.0.0/4",
		"https://255.255.255.255/":             "240.0.0.0/4",
		"https://[fd12:3456:789a:1::1]/":       "fc00::/7",
		"https://100.64.0.1/":                  "100.64.0.0/10",
		"https://192.168.0.1:8080/?token=abcd": "192.168.0.0/16",
	} {
		out := deliver(t, tr, url, message("{}"))
		if out.Verdict != push.Permanent || out.Status != 0 {
			t.Errorf("%s: got %s, want permanent", url, describe(out))
		}
		mustContain(t, url+" Reason", out.Reason, want)
		if strings.Contains(out.Reason, "token") {
			t.Errorf("%s: Reason %q repeats the query", url, out.Reason)
		}
	}
	if q := dns.questions(); len(q) != 0 {
		t.Errorf("resolver was asked %v; refused URLs must not reach DNS", q)
	}
}

// Options.AllowHosts limits the hosts posted to; the address rules still
// apply to the hosts it allows.
func TestAllowHosts(t *testing.T) {
	srv := newCounter(t, nil)
	dns := &fakeDNS{table: map[string][]string{}}
	for _, host := range []string{"hook.allowed.test", "a.b.allowed.test", "allowed.test", "exact.test", "other.test", "exact.test.evil.test", "notallowed.test"} {
		dns.table[host] = []string{"127.0.0.1"}
	}
	opts := loopbackOptions()
	opts.Resolver = dns
	opts.AllowHosts = []string{"*.allowed.test", "Exact.Test"}
	tr := newTransport(t, opts)
	for host, allowed := range map[string]bool{
		"hook.allowed.test":    true,
		"a.b.allowed.test":     true,
		"HOOK.Allowed.Test":    true,
		"exact.test":           true,
		"exact.test.":          true,
		"allowed.test":         false,
		"notallowed.test":      false,
		"other.test":           false,
		"exact.test.evil.test": false,
	} {
		out := deliver(t, tr, "http://"+host+":"+srv.port()+"/hook", message("{}"))
		switch {
		case allowed && out.Verdict != push.Accepted:
			t.Errorf("%s: got %s, want accepted", host, describe(out))
		case !allowed && (out.Verdict != push.Permanent || !strings.Contains(out.Reason, "is not in the allowlist (herald run/sweep --allow-host, Options.AllowHosts)")):
			t.Errorf("%s: got %s, want refused by the allowlist", host, describe(out))
		}
	}
	if n := srv.hits.Load(); n != 5 {
		t.Errorf("server got %d requests, want 5", n)
	}

	// An allowed host that resolves to a private address is still refused.
	opts.AllowPrivateNetwork = false
	out := deliver(t, newTransport(t, opts), "http://hook.allowed.test:"+srv.port()+"/", message("{}"))
	if out.Verdict != push.Permanent || !strings.Contains(out.Reason, "127.0.0.0/8") {
		t.Errorf("allowlisted host on loopback: got %s, want refused by the address rules", describe(out))
	}
}

// URLRefusals lists every rule a URL breaks before any connection, each
// with the herald flag that lifts it, and stops at one no flag lifts.
func TestURLRefusals(t *testing.T) {
	for raw, want := range map[string][]string{
		"https://hooks.example/x":       nil,
		"http://hooks.example/x":        {"--allow-http"},
		"http://127.0.0.2:8080/x":       {"--allow-http", "--allow-private-network"},
		"https://10.1.2.3/x":            {"--allow-private-network"},
		"https://LocalHost./x":          {"--allow-private-network"},
		"https://api.localhost/x":       {"--allow-private-network"},
		"http://169.254.169.254/meta":   {"--allow-http", ""},
		"https://192.0.2.10/hooks":      {""},
		"https://0x7f.1/":               {""},
		"https://user:pw@hooks.example": {""},
	} {
		var got []string
		for _, err := range transport.URLRefusals(raw) {
			var re *transport.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("%s: %v is not a *RefusedError", raw, err)
			}
			if re.OptIn != "" && !strings.Contains(err.Error(), "herald run/sweep "+re.OptIn) {
				t.Errorf("%s: %q does not name %s", raw, err, re.OptIn)
			}
			got = append(got, re.OptIn)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: opt-ins %q, want %q", raw, got, want)
		}
	}
}

// HTTP.Refusals judges a URL by the transport's own Options: what they
// allow is not refused, the rest is, each naming the flag that lifts it.
func TestHTTPRefusalsFollowItsOptions(t *testing.T) {
	for _, c := range []struct {
		opts transport.Options
		raw  string
		want []string
	}{
		{transport.Options{}, "http://127.0.0.2:8080/x", []string{"--allow-http", "--allow-private-network"}},
		{transport.Options{AllowHTTP: true}, "http://127.0.0.2:8080/x", []string{"--allow-private-network"}},
		{transport.Options{AllowHTTP: true, AllowPrivateNetwork: true}, "http://127.0.0.2:8080/x", nil},
		{transport.Options{AllowPrivateNetwork: true}, "https://localhost/x", nil},
		{transport.Options{AllowHosts: []string{"*.example"}}, "https://hooks.example/x", nil},
		{transport.Options{AllowHosts: []string{"*.example"}}, "https://hooks.test/x", []string{"--allow-host"}},
		{transport.Options{AllowHTTP: true, AllowPrivateNetwork: true}, "ftp://hooks.example/x", []string{""}},
	} {
		tr, err := transport.New(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, err := range tr.Refusals(c.raw) {
			var re *transport.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("%s: %v is not a *RefusedError", c.raw, err)
			}
			got = append(got, re.OptIn)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v, %s: opt-ins %q, want %q", c.opts, c.raw, got, c.want)
		}
	}
}

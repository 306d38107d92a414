package transport

import (
	"net/netip"
	"strings"
	"testing"
)

// Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (as of 2026-12), every cloud metadata address the big clouds document,
// and the other ranges herald never connects to: each refused at its first
// and last address, under every option unless it is one that
// AllowPrivateNetwork opens, with the source the rule names. The registries'
// globally reachable anycast services (AS112, AMT, PCP, TURN) are refused
// as well: no receiver lives there.
func TestSpecialPurposeRangesAreRefused(t *testing.T) {
	const private = true
	cases := []struct {
		prefix  string
		source  string // RFC or documentation; the rule's source must name it
		private bool
	}{
		// Cloud metadata: refused even with AllowPrivateNetwork, though
		// 100.100.100.200 is CGNAT and fd00:ec2:: unique local.
		{"100.100.100.200/32", "Alibaba Cloud", false},
		{"168.63.129.16/32", "Azure", false},
		{"fd00:ec2::/64", "AWS EC2", false},
		{"fd20:ce::254/128", "Google Compute Engine", false},
		{"fd00:42::42/128", "Scaleway", false},
		{"169.254.42.42/32", "RFC 3927", false},   // Scaleway
		{"169.254.169.254/32", "RFC 3927", false}, // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack, …
		{"169.254.170.2/32", "RFC 3927", false},   // AWS ECS task metadata
		{"169.254.0.23/32", "RFC 3927", false},    // Tencent Cloud metadata
		{"192.0.0.192/32", "RFC 6890", false},     // Oracle Cloud Infrastructure, older metadata

		// IANA IPv4 Special-Purpose Address Registry.
		{"0.0.0.0/8", "RFC 791", false},
		{"10.0.0.0/8", "RFC 1918", private},
		{"100.64.0.0/10", "RFC 6598", private},
		{"127.0.0.0/8", "RFC 1122", private},
		{"169.254.0.0/16", "RFC 3927", false},
		{"172.16.0.0/12", "RFC 1918", private},
		{"192.0.0.0/24", "RFC 6890", false},
		{"192.0.0.0/29", "RFC 7335", false},
		{"192.0.0.8/32", "RFC 6890", false},
		{"192.0.0.9/32", "RFC 7723", false},
		{"192.0.0.10/32", "RFC 8155", false},
		{"192.0.0.170/31", "RFC 8880", false},
		{"192.0.2.0/24", "RFC 5737", false},
		{"192.31.196.0/24", "RFC 7535", false},
		{"192.52.193.0/24", "RFC 7450", false},
		{"192.88.99.0/24", "RFC 7526", false},
		{"192.168.0.0/16", "RFC 1918", private},
		{"192.175.48.0/24", "RFC 7534", false},
		{"198.18.0.0/15", "RFC 2544", false},
		{"198.51.100.0/24", "RFC 5737", false},
		{"203.0.113.0/24", "RFC 5737", false},
		{"240.0.0.0/4", "RFC 1112", false},
		{"255.255.255.255/32", "RFC 8190", false},
		{"224.0.0.0/4", "RFC 5771", false},

		// IANA IPv6 Special-Purpose Address Registry.
		{"::1/128", "RFC 4291", private},
		{"::/128", "RFC 4291", false},
		{"::ffff:0:0/96", "", false}, // IPv4-mapped: judged as its IPv4 address; its ends are 0.0.0.0 and 255.255.255.255
		{"64:ff9b::/96", "RFC 6052", false},
		{"64:ff9b:1::/48", "RFC 8215", false},
		{"100::/64", "RFC 6666", false},
		{"100:0:0:1::/64", "RFC 9780", false},
		{"2001::/23", "RFC 2928", false},
		{"2001::/32", "RFC 4380", false},
		{"2001:1::1/128", "RFC 2928", false},
		{"2001:1::2/128", "RFC 2928", false},
		{"2001:1::3/128", "RFC 2928", false},
		{"2001:2::/48", "RFC 5180", false},
		{"2001:3::/32", "RFC 7450", false},
		{"2001:4:112::/48", "RFC 7535", false},
		{"2001:10::/28", "RFC 4843", false},
		{"2001:20::/28", "RFC 7343", false},
		{"2001:30::/28", "RFC 9374", false},
		{"2001:db8::/32", "RFC 3849", false},
		{"2002::/16", "RFC 3056", false},
		{"2620:4f:8000::/48", "RFC 7534", false},
		{"3fff::/20", "RFC 9637", false},
		{"5f00::/16", "RFC 9602", false},
		{"fc00::/7", "RFC 4193", private},
		{"fe80::/10", "RFC 4291", false},
		// Not in the registry, never a receiver either.
		{"::/96", "RFC 4291", false},
		{"fec0::/10", "RFC 3879", false},
		{"ff00::/8", "RFC 4291", false},
	}
	for _, c := range cases {
		p := netip.MustParsePrefix(c.prefix)
		for _, addr := range []netip.Addr{p.Masked().Addr(), lastAddr(p)} {
			for _, open := range []bool{false, true} {
				err := CheckAddress(addr, open)
				if c.private && open {
					if err != nil {
						t.Errorf("%s (%s): CheckAddress(%s, AllowPrivateNetwork) = %v, want allowed", c.prefix, c.source, addr, err)
					}
					continue
				}
				if err == nil {
					t.Errorf("%s (%s): CheckAddress(%s, allowPrivate=%t) = nil, want refused", c.prefix, c.source, addr, open)
					continue
				}
				// The source of the narrowest range listed that holds addr
				// (2001:: is Teredo's before it is 2001::/23's).
				want := c.source
				for _, o := range cases {
					if q := netip.MustParsePrefix(o.prefix); q.Contains(addr) && q.Bits() > p.Bits() {
						want = o.source
					}
				}
				if r := ruleOf(addr); want != "" && (r == nil || !strings.Contains(r.source, want)) {
					t.Errorf("%s: %s is refused by the rule of %v, whose source does not name %s", c.prefix, addr, r.prefix, want)
				}
			}
		}
	}
	// And the other way: each rule's range is in the table above, so none
	// is added without its source.
	listed := map[string]bool{}
	for _, c := range cases {
		listed[netip.MustParsePrefix(c.prefix).String()] = true
	}
	for _, r := range addrRules {
		if !listed[r.prefix.String()] && r.prefix.String() != "::ffff:0:0:0/96" {
			t.Errorf("rule %s (%s) is not in this test's table", r.prefix, r.name)
		}
		if r.source == "" {
			t.Errorf("rule %s has no source", r.prefix)
		}
	}
}

// ruleOf is the first rule whose range holds addr, unmapped.
func ruleOf(addr netip.Addr) *addrRule {
	for i, r := range addrRules {
		if r.prefix.Contains(addr.Unmap()) {
			return &addrRules[i]
		}
	}
	return nil
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

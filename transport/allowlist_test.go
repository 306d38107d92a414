package transport_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/transport"
)

func TestHostPatternMatch(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"hooks.example.com", []string{"hooks.example.com", "HOOKS.Example.COM", "hooks.example.com."}, []string{"example.com", "a.hooks.example.com", "hooks.example.com.evil.net", "hooks-example.com", ""}},
		{"*.example.com", []string{"a.example.com", "a.b.example.com", "A.EXAMPLE.COM."}, []string{"example.com", "aexample.com", "example.com.evil.net", ".example.com", "a.example.co"}},
		{"Hooks.Example.COM.", []string{"hooks.example.com"}, []string{"example.com"}},
		{"203.0.113.7", []string{"203.0.113.7"}, []string{"203.0.113.70", "x.203.0.113.7"}},
		{"2001:db8::1", []string{"2001:db8::1", "[2001:db8::1]", "2001:DB8:0::1"}, []string{"2001:db8::2"}},
		{"[2001:db8::2]", []string{"2001:db8::2"}, []string{"2001:db8::1"}},
		{"under_score.example", []string{"under_score.example"}, nil},
		{"xn--bcher-kva.example", []string{"xn--bcher-kva.example"}, []string{"bücher.example"}},
	}
	for _, c := range cases {
		p, err := transport.ParseHostPattern(c.pattern)
		if err != nil {
			t.Errorf("ParseHostPattern(%q) = %v", c.pattern, err)
			continue
		}
		for _, h := range c.match {
			if !p.Match(h) {
				t.Errorf("%s does not match %q", p, h)
			}
		}
		for _, h := range c.miss {
			if p.Match(h) {
				t.Errorf("%s matches %q", p, h)
			}
		}
	}
	if (transport.HostPattern{}).Match("") {
		t.Error("the zero pattern matches")
	}
}

func TestHostPatternErrors(t *testing.T) {
	for pattern, want := range map[string]string{
		"":                        "is empty",
		"*":                       "would allow every host",
		"https://hooks.example":   "is a URL",
		"hooks.example/path":      "has a path",
		"user@hooks.example":      "userinfo",
		"hooks.example:443":       "has a port",
		"*.*.example.com":         "only *.example.com",
		"a*.example.com":          "only *.example.com",
		"hooks.*.com":             "only *.example.com",
		"*.":                      "would allow every host",
		"bücher.example":          "is not ASCII",
		"hooks example":           "space or control character",
		"a..example":              "empty label",
		".example":                "empty label",
		"-bad.example":            "starts or ends with '-'",
		"bad-.example":            "starts or ends with '-'",
		"bad!.example":            "'!'",
		strings.Repeat("a", 64):   "longer than 63",
		strings.Repeat("a.", 130): "longer than 253",
		"127.1":                   "ends in a number",
		"0x7f.0.0.1":              "ends in a number",
		"fe80::1%eth0":            "not an IP address",
		"[::1]:80":                "not an IP address",
	} {
		_, err := transport.ParseHostPattern(pattern)
		if !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("ParseHostPattern(%q) = %v, want ErrInvalid", pattern, err)
			continue
		}
		mustContain(t, "ParseHostPattern("+pattern+")", err.Error(), want)
	}
}

func TestAllowHostsReportsEveryBadPattern(t *testing.T) {
	tr, err := transport.New(transport.Options{AllowHosts: []string{"ok.example", "", "*.ok.example", "a b"}})
	if tr != nil || !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("New = %v, %v", tr, err)
	}
	mustContain(t, "error", err.Error(), "invalid AllowHosts[1]: is empty")
	mustContain(t, "error", err.Error(), `invalid AllowHosts[3]: "a b" has a space`)
	tr, err = transport.New(transport.Options{AllowHosts: []string{"ok.example", "*.ok.example"}})
	if err != nil {
		t.Fatalf("New(good AllowHosts) = %v", err)
	}
	for host, allowed := range map[string]bool{"a.ok.example": true, "ok.example": true, "example": false} {
		if refusals := tr.Refusals("https://" + host + "/"); (len(refusals) == 0) != allowed {
			t.Errorf("Refusals(%s) = %v, want allowed=%t", host, refusals, allowed)
		}
	}
}

package transport_test

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/ and run with go test.

func FuzzParseRetryAfter(f *testing.F) {
	f.Add("120", at.Unix())
	f.Fuzz(func(t *testing.T, value string, atUnix int64) {
		now := time.Unix(atUnix, 0).UTC()
		d, ok := transport.ParseRetryAfter(value, now)
		if d2, ok2 := transport.ParseRetryAfter(value, now); d2 != d || ok2 != ok {
			t.Fatalf("not deterministic: %v,%t then %v,%t", d, ok, d2, ok2)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false: an invalid value must give 0", value, d)
		}
		if d < 0 || d > transport.RetryAfterCeiling {
			t.Fatalf("ParseRetryAfter(%q) = %v, outside [0, ceiling]", value, d)
		}
		v := strings.Trim(value, " \t")
		digits := v != "" && strings.Trim(v, "0123456789") == ""
		if digits != (ok && len(v) > 0 && v[0] >= '0' && v[0] <= '9') {
			t.Fatalf("ParseRetryAfter(%q) = %v, %t: digit strings, and only they among values starting with a digit, are delay-seconds", value, d, ok)
		}
		if ok && !digits {
			// Never more lenient than net/http about dates.
			if _, err := http.ParseTime(v); err != nil {
				t.Fatalf("ParseRetryAfter(%q) accepted a date http.ParseTime refuses: %v", value, err)
			}
		}
		// An IMF-fixdate (RFC 9110 §5.6.7) is exact: one space between its
		// fields, the names' case as given. time.Parse is more lenient
		// (repeated spaces, "DeC"), so only a value it reads that formats
		// back the same is one that must be accepted.
		if pt, err := time.Parse(http.TimeFormat, v); err == nil && pt.Format(http.TimeFormat) == v && !ok {
			t.Fatalf("ParseRetryAfter(%q) refused an IMF-fixdate", value)
		}
	})
}

func FuzzClassify(f *testing.F) {
	f.Add(503, "120", "", at.Unix())
	f.Fuzz(func(t *testing.T, status int, retryAfter, location string, atUnix int64) {
		now := time.Unix(atUnix, 0).UTC()
		header := http.Header{}
		if retryAfter != "" {
			header.Set("Retry-After", retryAfter)
		}
		if location != "" {
			header.Set("Location", location)
		}
		out := transport.Classify(status, header, now)
		if out.Status != status {
			t.Fatalf("Status = %d, want %d", out.Status, status)
		}
		ra, raOK := transport.ParseRetryAfter(retryAfter, now)
		is2xx := status >= 200 && status <= 299
		switch out.Verdict {
		case push.Accepted:
			if !is2xx {
				t.Fatalf("%d accepted", status)
			}
		case push.Permanent:
			if status != 410 {
				t.Fatalf("%d permanent", status)
			}
		case push.Rejected:
			if status < 400 || status > 499 || status == 408 || status == 410 || status == 425 || status == 429 || raOK {
				t.Fatalf("%d (Retry-After %q) rejected", status, retryAfter)
			}
		case push.Transient:
			if is2xx || status == 410 {
				t.Fatalf("%d transient", status)
			}
			if status >= 400 && status <= 499 && status != 408 && status != 425 && status != 429 && !raOK {
				t.Fatalf("%d without Retry-After transient", status)
			}
		default:
			t.Fatalf("verdict %v", out.Verdict)
		}
		if is2xx || status == 410 {
			if out.HasRetryAfter || out.RetryAfter != 0 {
				t.Fatalf("%d carries a Retry-After", status)
			}
		} else if out.HasRetryAfter != raOK || out.RetryAfter != ra {
			t.Fatalf("%d: Retry-After %v/%t, parser says %v/%t", status, out.RetryAfter, out.HasRetryAfter, ra, raOK)
		}
		if (out.Location != "") && (status < 300 || status > 399) || len(out.Location) > transport.MaxLocationBytes {
			t.Fatalf("%d: Location %q", status, out.Location)
		}
		if (out.Reason == "") != (out.Verdict == push.Accepted) {
			t.Fatalf("%d: Reason %q for %v", status, out.Reason, out.Verdict)
		}
	})
}

func FuzzHostPattern(f *testing.F) {
	f.Add("*.example.com", "a.example.com")
	f.Fuzz(func(t *testing.T, pattern, host string) {
		p, err := transport.ParseHostPattern(pattern)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseHostPattern(%q) = %v, want ErrInvalid", pattern, err)
			}
			if p.Match(host) {
				t.Fatalf("a refused pattern matches %q", host)
			}
			return
		}
		again, err := transport.ParseHostPattern(p.String())
		if err != nil || again != p {
			t.Fatalf("ParseHostPattern(%q).String() = %q does not parse back: %v", pattern, p, err)
		}
		matched := p.Match(host)
		if p.Match(asciiUpper(host)) != matched {
			t.Fatalf("%s: match of %q depends on ASCII case", p, host)
		}
		s := p.String()
		if name, wild := strings.CutPrefix(s, "*."); wild {
			if !p.Match("a."+name) || p.Match(name) {
				t.Fatalf("%s: wildcard does not match a.%s or matches %s", p, name, name)
			}
			if matched && !strings.HasSuffix(strings.TrimSuffix(strings.ToLower(host), "."), "."+name) {
				t.Fatalf("%s matches %q, which is not below %s", p, host, name)
			}
		} else if !p.Match(s) {
			t.Fatalf("%s does not match itself", p)
		}
	})
}

func FuzzCheckAddress(f *testing.F) {
	f.Add([]byte{169, 254, 169, 254})
	f.Fuzz(func(t *testing.T, b []byte) {
		addr, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		strict, open := transport.CheckAddress(addr, false), transport.CheckAddress(addr, true)
		if strict == nil && open != nil {
			t.Fatalf("%s: AllowPrivateNetwork refuses what the default allows", addr)
		}
		if addr.Is4In6() {
			if (transport.CheckAddress(addr.Unmap(), false) == nil) != (strict == nil) {
				t.Fatalf("%s and %s are judged differently", addr, addr.Unmap())
			}
		}
		if strict == nil && (addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsMulticast() || addr.IsUnspecified() || !addr.Unmap().IsGlobalUnicast()) {
			t.Fatalf("%s is allowed", addr)
		}
		if open == nil && (addr.Unmap().IsLinkLocalUnicast() || addr.Unmap().IsMulticast() || addr.Unmap().IsUnspecified()) {
			t.Fatalf("%s is allowed with AllowPrivateNetwork", addr)
		}
	})
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

package cli

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzParseInstant: --at (sweep, unpark, skip, rewind) never panics the
// parser; what it accepts is a UTC instant from 1970 to 9999 that it reads
// back the same when printed as RFC 3339, and what it refuses is a usage
// error (exit 2) that names the flag.
func FuzzParseInstant(f *testing.F) {
	for _, seed := range []string{"2026-03-15T11:00:00Z", "1773572400", "2026-03-15T12:00:00.123456789+01:00", "-5", "253402300800",
		"99999999999999999999", "0", "yesterday", "", "2026-13-01T00:00:00Z", "1e9", " 1", "+1",
		"0000-01-01T0:00:00+00:00", "1969-12-31T23:59:59Z", "2026-03-15 11:00:00Z", "2026-03-15  11:00:00Z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, err := parseInstant(s)
		if err != nil {
			if !isUsage(err) || !strings.Contains(err.Error(), "--at") {
				t.Fatalf("parseInstant(%q): %v is not a usage error naming --at", s, err)
			}
			return
		}
		if at.Location() != time.UTC || at.Year() < 1970 && at.Unix() < 0 || at.Year() > 9999 {
			t.Fatalf("parseInstant(%q) = %v", s, at)
		}
		again, err := parseInstant(at.Format(time.RFC3339Nano))
		if err != nil || !again.Equal(at) {
			t.Fatalf("parseInstant(%q) = %v, which does not read back: %v, %v", s, at, again, err)
		}
	})
}

// FuzzParseDatabase: --database never panics the parser, anything but
// sqlite:PATH or a postgres URL is a usage error, and the database's name
// as herald prints it (errors, migrate status) never holds the password,
// whether in the URL's userinfo or in its password parameter.
func FuzzParseDatabase(f *testing.F) {
	for _, seed := range []string{"sqlite:./herald.db", "postgres://app:hunter22@db.example/herald", "postgresql://app@db/herald?sslmode=disable",
		"postgres://app@db/herald?password=hunter22", "postgres://app:pa@ss22@db/herald", "mysql://root:hunter22@db/x", "sqlite:", "", "postgres://",
		"host=db user=app password=hunter22 dbname=herald", "host=db password = 'hunter 22'", "?pAssword=000000",
		"pAssword=herald"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDatabase("", s)
		if err != nil {
			if !isUsage(err) {
				t.Fatalf("parseDatabase(%q): %v is not a usage error", s, err)
			}
			echoed := strings.ReplaceAll(err.Error(), databaseHint, "") // herald's own words may hold any short "password"
			for _, sec := range passwords(s) {
				if leaks(echoed, sec) {
					t.Fatalf("parseDatabase(%q): the error %q holds the password %q", s, err, sec.pw)
				}
			}
			return
		}
		if d.kind != "sqlite" && d.kind != "postgres" {
			t.Fatalf("parseDatabase(%q) = kind %q", s, d.kind)
		}
		for _, sec := range passwords(s) {
			if leaks(d.String(), sec) {
				t.Fatalf("parseDatabase(%q).String() = %q holds the password %q", s, d, sec.pw)
			}
		}
	})
}

// secret is a password a connection string carries, and the string with
// that password's place masked: what herald may show of it.
type secret struct{ pw, masked string }

// leaks says whether shown, herald's words about the --database value,
// holds the password: more often than the value with the password's place
// masked holds it, as it is or quoted (errors show it %q, and an escape
// such as \x00 can spell a password's digits). Whatever the masked value
// holds herald may show: a host named like the password, a keyword and the
// mask that spell it ("password=x" from "password=password=x"), or the
// error's closing quote after a host. An empty password cannot leak.
func leaks(shown string, sec secret) bool {
	if sec.pw == "" {
		return false
	}
	return strings.Count(shown, sec.pw) > max(strings.Count(sec.masked, sec.pw), strings.Count(strconv.Quote(sec.masked), sec.pw))
}

// passwords returns the passwords a connection string carries, in a URL's
// userinfo (as written and percent-decoded) or as a password parameter (of
// a URL's query or of a libpq keyword/value string), if they are long
// enough that finding one by chance in other text means nothing.
func passwords(s string) []secret {
	var out []secret
	mask := func(from, to int) string { return s[:from] + "xxxxx" + s[to:] }
	if _, rest, ok := strings.Cut(s, "://"); ok {
		base := len(s) - len(rest)
		authority, _, _ := strings.Cut(rest, "/")
		authority, _, _ = strings.Cut(authority, "?")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			if c := strings.IndexByte(authority[:i], ':'); c >= 0 {
				pw, masked := authority[c+1:i], mask(base+c+1, base+i)
				out = append(out, secret{pw, masked})
				if un, err := url.PathUnescape(pw); err == nil {
					out = append(out, secret{un, masked})
				}
			}
		}
	}
	lower := strings.Map(func(r rune) rune { // ASCII only: the same byte offsets as s
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
	if len(lower) != len(s) {
		lower = s // invalid UTF-8 was replaced: look for the lowercase word only
	}
	const space = " \t\n\v\f\r"
	for i := strings.Index(lower, "password"); i >= 0; {
		rest := strings.TrimLeft(s[i+len("password"):], space)
		if v, ok := strings.CutPrefix(rest, "="); ok {
			v = strings.TrimLeft(v, space)
			from := len(s) - len(v)
			if end := strings.IndexAny(v, space+"&;#"); end >= 0 {
				v = v[:end]
			}
			out = append(out, secret{strings.Trim(v, "'"), mask(from, from+len(v))})
		}
		next := strings.Index(lower[i+1:], "password")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	long := out[:0]
	for _, sec := range out {
		if len(sec.pw) >= 6 {
			long = append(long, sec)
		}
	}
	return long
}

// A password that holds an unescaped '@' is refused before the driver
// reads its rest as the host and prints it (found by a newcomer).
func TestDatabaseRefusesAnAtInThePassword(t *testing.T) {
	_, err := parseDatabase("", "postgres://alice:Tr0ub4dor@HorseBattery@127.0.0.1:1/db")
	require.True(t, isUsage(err), "%v", err)
	require.Contains(t, err.Error(), "percent-encode it as %40")
	require.NotContains(t, err.Error(), "Tr0ub4dor")
	require.NotContains(t, err.Error(), "HorseBattery")
	d, err := parseDatabase("", "postgres://alice:Tr0ub4dor%40HorseBattery@127.0.0.1:1/db?x=a@b")
	require.NoError(t, err, "encoded, and an '@' in the query, are fine")
	require.Equal(t, "postgres://alice:xxxxx@127.0.0.1:1/db?x=a@b", d.String())
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:hunter22@db/herald":                  "postgres://app:xxxxx@db/herald",
		"postgres://app:pa@ss22@db/herald":                   "postgres://app:xxxxx@db/herald",
		"postgres://app@db/herald?sslmode=disable":           "postgres://app@db/herald?sslmode=disable",
		"postgres://app@db/herald?password=hunter22&x=1":     "postgres://app@db/herald?password=xxxxx&x=1",
		"host=db user=app password=hunter22 dbname=herald":   "host=db user=app password=xxxxx dbname=herald",
		"host=db PASSWORD = 'hunter 22' dbname=herald":       "host=db PASSWORD = xxxxx dbname=herald",
		"postgresql://app:hunter22@db:5432/h?password=other": "postgresql://app:xxxxx@db:5432/h?password=xxxxx",
		// pgx decodes a query's names: this is a password too.
		"postgres://app@db/h?pass%77ord=hunter22&sslmode=require": "postgres://app@db/h?pass%77ord=xxxxx&sslmode=require",
		"postgres://app@db/h?sslpassword=k3y":                     "postgres://app@db/h?sslpassword=xxxxx",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

package cli

import (
	"net/url"
	"regexp"
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
			for _, pw := range passwords(s) {
				if leaks(echoed, s, pw) {
					t.Fatalf("parseDatabase(%q): the error %q holds the password %q", s, err, pw)
				}
			}
			return
		}
		if d.kind != "sqlite" && d.kind != "postgres" {
			t.Fatalf("parseDatabase(%q) = kind %q", s, d.kind)
		}
		for _, pw := range passwords(s) {
			// The password's own place is gone (its value may also be
			// elsewhere in the string, a host named like it).
			if leaks(d.String(), s, pw) {
				t.Fatalf("parseDatabase(%q).String() = %q holds the password %q", s, d, pw)
			}
		}
	})
}

// passwords returns the passwords a connection string carries, in a URL's
// userinfo or as a password parameter (of a URL's query or of a libpq
// keyword/value string), if they are long enough that finding one by chance
// in other text means nothing.
// leaks says whether shown, herald's words about the --database value s,
// holds the password pw: as often as s holds it, or as s quoted (errors
// show it %q, and an escape such as \x00 can spell a password's digits),
// where the password's own place must have taken one away; and at all when
// s holds it only in another form (percent-encoded). An empty password
// cannot leak.
//
// herald's own marks of a hidden password (":xxxxx@", "password=xxxxx")
// are cut out of shown first: a password such as "password=x" (from
// "password=password=x") is spelled again by its keyword and the mask
// that replaced it, which shows nothing of it.
func leaks(shown, s, pw string) bool {
	if pw == "" {
		return false
	}
	shown = userinfoMark.ReplaceAllString(shown, "\x00${1}")
	shown = parameterMark.ReplaceAllString(shown, "\x00${1}")
	return strings.Count(shown, pw) >= max(strings.Count(s, pw), strings.Count(strconv.Quote(s), pw), 1)
}

// userinfoMark and parameterMark are a password's place as redactDSN
// leaves it: the mask after a URL's user (the authority's last '@'), or
// after a password keyword, up to a separator or the end (in an error, the
// closing quote or an escape). A password that itself begins with xxxxx is
// not taken for a mark where it leaked.
var (
	userinfoMark  = regexp.MustCompile(`:xxxxx@([^@/?"]*)`)
	parameterMark = regexp.MustCompile(`(?i)password[ \t\n\v\f\r]*=[ \t\n\v\f\r]*xxxxx($|[ \t\n\v\f\r&;#"\\])`)
)

func passwords(s string) []string {
	var out []string
	if _, rest, ok := strings.Cut(s, "://"); ok {
		authority, _, _ := strings.Cut(rest, "/")
		authority, _, _ = strings.Cut(authority, "?")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			if _, pw, ok := strings.Cut(authority[:i], ":"); ok {
				out = append(out, pw)
				if un, err := url.PathUnescape(pw); err == nil {
					out = append(out, un)
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
	for i := strings.Index(lower, "password"); i >= 0; {
		rest := strings.TrimLeft(s[i+len("password"):], " \t\n\v\f\r")
		if v, ok := strings.CutPrefix(rest, "="); ok {
			v = strings.TrimLeft(v, " \t\n\v\f\r")
			if end := strings.IndexAny(v, " \t\n\v\f\r&;#"); end >= 0 {
				v = v[:end]
			}
			out = append(out, strings.Trim(v, "'"))
		}
		next := strings.Index(lower[i+1:], "password")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	long := out[:0]
	for _, pw := range out {
		if len(pw) >= 6 {
			long = append(long, pw)
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

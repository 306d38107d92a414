package store_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// FuzzValidateURL: registration URLs from outside never panic validation,
// and an accepted URL is absolute http(s) with a host and no userinfo,
// fragment, space or control character.
func FuzzValidateURL(f *testing.F) {
	for _, seed := range []string{
		"https://remote.example/inbox", "http://127.0.0.1:8080/hook", "https://user:pw@a.example/",
		"javascript:alert(1)", "https:///x", "https://a.example/#f", "https://[::1]:443/x", "https://a.example/a b",
		"https://0x7f.1/", "https://2130706433/", "https://a.example/\x00", "//a.example/x", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := store.ValidateURL(raw)
		if err != nil {
			require.ErrorIs(t, err, journal.ErrInvalid)
			if strings.Contains(raw, "@") {
				if u, perr := url.Parse(raw); perr == nil && u.User != nil {
					if p, ok := u.User.Password(); ok && len(p) > 3 {
						require.NotContains(t, err.Error(), p, "the error never repeats a password")
					}
				}
			}
			return
		}
		u, perr := url.Parse(raw)
		require.NoError(t, perr)
		require.Contains(t, []string{"http", "https"}, u.Scheme)
		require.NotEmpty(t, u.Hostname())
		require.Nil(t, u.User)
		require.Empty(t, u.Fragment)
		for _, c := range []byte(raw) {
			require.Greater(t, c, byte(0x20))
			require.NotEqual(t, byte(0x7f), c)
		}
	})
}

func TestValidateURLRefusals(t *testing.T) {
	for raw, want := range map[string]string{
		"":                             "is empty",
		"/inbox":                       "scheme",
		"ftp://a.example/":             `scheme "ftp"`,
		"https://u:hunter2@a.example/": "userinfo",
		"https:///inbox":               "no host",
		"https://a.example/#frag":      "fragment",
		"https://a.example/a b":        "U+0020",
		"https://a.example/\x7f":       "cannot be parsed: net/url: invalid control character in URL",
		"https://a.example:80x/tok":    `cannot be parsed: invalid port ":80x" after host`,
		"https://a.example/é\u00a0":    "",
		"https://a.example/" + strings.Repeat("a", store.MaxURLBytes): "longer than",
		"http://127.0.0.1:0/hook":                                     "has port 0: it must be 1 to 65535",
		"http://127.0.0.1:65536/hook":                                 "has port 65536",
		"https://[::1]:99999/hook":                                    "has port 99999",
		"http://127.0.0.1:080/hook":                                   "has port 080: write it 80",
		"https://a\u202eb.example/":                                   "no domain name",
	} {
		err := store.ValidateURL(raw)
		require.ErrorIs(t, err, journal.ErrInvalid, raw)
		require.ErrorContains(t, err, want, raw)
		require.NotContains(t, err.Error(), "hunter2")
	}
	for _, ok := range []string{"https://remote.example/users/alice/inbox?x=1", "http://127.0.0.1:1/", "https://[::1]:65535/",
		"https://bücher.example/", "https://ÉCOLE.example/in", "http://my_service:8080/"} {
		require.NoError(t, store.ValidateURL(ok), ok)
	}
}

// A registration's name reads back apart whatever its stream and id hold.
func TestNameIsUnambiguous(t *testing.T) {
	for _, c := range []struct{ stream, id, want string }{
		{"orders/1001", "billing", "stream=orders/1001 id=billing"},
		{"a/b", "c", "stream=a/b id=c"},
		{"a", "b/c", "stream=a id=b/c"},
		{"actor/alice", "https://remote.example/inbox", "stream=actor/alice id=https://remote.example/inbox"},
		{"s", "two words", `stream=s id="two words"`},
		{"s x", `id=" q`, `stream="s x" id="id=\" q"`},
		{"s", "", `stream=s id=""`},
		{"s", "r\x1b[31m", `stream=s id="r\x1b[31m"`},
	} {
		if got := store.Name(c.stream, c.id); got != c.want {
			t.Errorf("Name(%q, %q) = %s, want %s", c.stream, c.id, got, c.want)
		}
	}
}

// hostCases are URLs written in the ways HostOf must see through.
var hostCases = map[string]string{
	"https://Example.ORG/inbox":     "example.org:443",
	"https://example.org:443/x":     "example.org:443",
	"http://example.org/x":          "example.org:80",
	"http://example.org:8080":       "example.org:8080",
	"HTTPS://UP.example/?a=B":       "up.example:443",
	"https://a.example?x=y/z":       "a.example:443",
	"https://host.example:/x":       "host.example:443",
	"https://[::1]/x":               "[::1]:443",
	"https://[::1]:8443/x":          "[::1]:8443",
	"http://127.0.0.2:9/x?q=1":      "127.0.0.2:9",
	"https://ÉCOLE.example/in":      "École.example:443", // ASCII letters only, as SQL's lower() under "C"
	"https://[2001:DB8::1]:80/path": "[2001:db8::1]:80",
}

func TestHostOf(t *testing.T) {
	for raw, want := range hostCases {
		require.NoError(t, store.ValidateURL(raw), raw)
		require.Equal(t, want, store.HostOf(raw), raw)
		require.Equal(t, want, store.Registration{URL: raw}.Host(), raw)
	}
	for _, bad := range []string{"", "ftp://x.example/", "https:///nohost", "://x"} {
		require.Equal(t, "(invalid url)", store.HostOf(bad), bad)
	}
}

func TestWants(t *testing.T) {
	r := store.Registration{Kinds: []string{"order.*", "invoice.paid"}}
	for kind, want := range map[string]bool{
		"order.created": true, "order.line.added": true, "order.": true, "order": false,
		"invoice.paid": true, "invoice.paid.late": false, "invoice.issued": false, "": false,
	} {
		require.Equal(t, want, r.Wants(kind), kind)
	}
	require.True(t, store.Registration{}.Wants("anything"), "no kinds: every kind")
	require.True(t, store.Registration{Kinds: []string{"*"}}.Wants("x"))
}

func TestValidateKinds(t *testing.T) {
	require.NoError(t, store.ValidateKinds(nil))
	require.NoError(t, store.ValidateKinds([]string{"order.*", "*", "Create"}))
	for want, kinds := range map[string][]string{
		"pattern 2 is empty":        {"a", ""},
		`"a*b" may have one "*"`:    {"a*b"},
		`"**" may have one "*"`:     {"**"},
		`"a" is given twice`:        {"a", "a"},
		"whitespace":                {"order created"},
		"more than 64":              make([]string, 65),
		"longer than 200 bytes":     {strings.Repeat("k", 201)},
		"has whitespace or a contr": {"a\x07"},
	} {
		err := store.ValidateKinds(kinds)
		require.ErrorIs(t, err, journal.ErrInvalid, want)
		require.ErrorContains(t, err, "invalid kinds: ", want)
		require.ErrorContains(t, err, want)
	}
}

// A config sent again with its keys in another order or other white space
// is the same delivery (a turn in flight keeps its lease); another value, a
// number written otherwise, or a config that is not JSON and differs is not.
func TestSameDeliveryReadsTheConfigAsJSON(t *testing.T) {
	stored := store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://a.example/r",
		Config: store.Config(`{"secret":"s3cr3t","headers":{"X-A":"1","X-B":"2"}}`)}
	for config, same := range map[string]bool{
		`{"headers":{"X-B":"2","X-A":"1"},"secret":"s3cr3t"}`:                      true,
		"{ \"secret\": \"s3cr3t\",\n \"headers\": {\"X-A\":\"1\",\"X-B\":\"2\"} }": true,
		`{"secret":"s3cr3t","headers":{"X-A":"1","X-B":"3"}}`:                      false,
		`{"secret":"s3cr3t","headers":{"X-A":"1"}}`:                                false,
		`{"secret":"s3cr3t","headers":{"X-A":"1","X-B":"2"},"n":1}`:                false,
		`{"secret":"s3cr3t","headers":{"X-A":"1","X-B":"2"}} {}`:                   false,
		`not json`: false,
	} {
		r := stored
		r.Config = store.Config(config)
		if got := r.SameDelivery(stored); got != same {
			t.Errorf("SameDelivery of config %s = %t, want %t", config, got, same)
		}
	}
	n1, n2 := stored, stored
	n1.Config, n2.Config = store.Config(`{"n":1}`), store.Config(`{"n":1.0}`)
	if n1.SameDelivery(n2) {
		t.Error("SameDelivery of 1 and 1.0: true, want false (numbers compare as written)")
	}
}

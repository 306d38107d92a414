package push_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
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
		err := push.ValidateURL(raw)
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
		"https://a.example/" + strings.Repeat("a", push.MaxURLBytes): "longer than",
	} {
		err := push.ValidateURL(raw)
		require.ErrorIs(t, err, journal.ErrInvalid, raw)
		require.ErrorContains(t, err, want, raw)
		require.NotContains(t, err.Error(), "hunter2")
	}
	require.NoError(t, push.ValidateURL("https://remote.example/users/alice/inbox?x=1"))
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
		if got := push.Name(c.stream, c.id); got != c.want {
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
		require.NoError(t, push.ValidateURL(raw), raw)
		require.Equal(t, want, push.HostOf(raw), raw)
		require.Equal(t, want, push.Registration{URL: raw}.Host(), raw)
	}
	for _, bad := range []string{"", "ftp://x.example/", "https:///nohost", "://x"} {
		require.Equal(t, "(invalid url)", push.HostOf(bad), bad)
	}
}

func TestWants(t *testing.T) {
	r := push.Registration{Kinds: []string{"order.*", "invoice.paid"}}
	for kind, want := range map[string]bool{
		"order.created": true, "order.line.added": true, "order.": true, "order": false,
		"invoice.paid": true, "invoice.paid.late": false, "invoice.issued": false, "": false,
	} {
		require.Equal(t, want, r.Wants(kind), kind)
	}
	require.True(t, push.Registration{}.Wants("anything"), "no kinds: every kind")
	require.True(t, push.Registration{Kinds: []string{"*"}}.Wants("x"))
}

func TestValidateKinds(t *testing.T) {
	require.NoError(t, push.ValidateKinds(nil))
	require.NoError(t, push.ValidateKinds([]string{"order.*", "*", "Create"}))
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
		err := push.ValidateKinds(kinds)
		require.ErrorIs(t, err, journal.ErrInvalid, want)
		require.ErrorContains(t, err, "invalid kinds: ", want)
		require.ErrorContains(t, err, want)
	}
}

// A registration with Kinds gets only the records of those kinds; the
// others are passed as a projection that yields no message: the cursor moves
// past them, nothing is sent, and a final record of another kind still
// completes the registration.
func TestKindsFilterRecords(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	_, err := store.Append(ctx, "order/7",
		journal.Entry{ID: "e1", Kind: "order.created", Payload: []byte(`{}`)},
		journal.Entry{ID: "e2", Kind: "customer.updated", Payload: []byte(`{}`)},
		journal.Entry{ID: "e3", Kind: "invoice.paid", Payload: []byte(`{}`)},
		journal.Entry{ID: "e4", Kind: "order.shipped", Payload: []byte(`{}`)},
	)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []string
	)
	tr := push.TransportFunc(func(_ context.Context, reg push.Registration, msg push.Message, _ time.Time) (push.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, reg.ID+":"+msg.ID)
		return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
	})
	w, err := push.NewWorker(store, store, tr, webhookProjection{})
	require.NoError(t, err)
	_, err = w.Register(ctx, push.Registration{Stream: "order/7", ID: "orders", Namespace: "webhook",
		URL: "https://a.example/", Kinds: []string{"order.*"}})
	require.NoError(t, err)
	_, err = w.Register(ctx, push.Registration{Stream: "order/7", ID: "all", Namespace: "webhook", URL: "https://b.example/"})
	require.NoError(t, err)

	rep, err := w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC), 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"orders:e1", "orders:e4", "all:e1", "all:e2", "all:e3", "all:e4"}, got)
	require.Equal(t, 6, rep.Deliveries)
	require.Equal(t, 8, rep.Records, "every record is passed by both, sent or not")
	for _, id := range []string{"orders", "all"} {
		st, err := store.Get(ctx, "order/7", id)
		require.NoError(t, err)
		require.Equal(t, uint64(5), st.NextSeq, "%s: the cursor moved past every record", id)
	}

	// A final record of a kind it does not want still ends its stream.
	_, err = store.Append(ctx, "order/7", journal.Entry{ID: "e5", Kind: "customer.closed", Payload: []byte(`{}`), Final: true})
	require.NoError(t, err)
	got = nil
	rep, err = w.RunOnce(ctx, time.Date(2026, 3, 15, 11, 1, 0, 0, time.UTC), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"all:e5"}, got)
	require.Equal(t, 2, rep.Completed, fmt.Sprintf("%+v", rep))
}

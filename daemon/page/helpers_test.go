package page_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

const testToken = "t0ken-for-the-page-7Qm3Wn8Er5Ty"

// TestMain starts a throwaway PostgreSQL for the tests that run on it too.
func TestMain(m *testing.M) { pgtest.Main(m) }

// stores are the stores the tests that depend on a store's writes run on.
var stores = map[string]func(t *testing.T) store.Backend{
	"sqlite":   func(t *testing.T) store.Backend { return seedtest.SQLite(t) },
	"postgres": func(t *testing.T) store.Backend { return pgtest.NewStore(t) },
}

// seeded returns a SQLite store filled by seed.Seed.
func seeded(t *testing.T) *sqlite.Store {
	t.Helper()
	s := seedtest.SQLite(t)
	require.NoError(t, seed(t.Context(), s))
	return s
}

// seededOn returns a store made by open, filled by seed.Seed.
func seededOn(t *testing.T, open func(t *testing.T) store.Backend) store.Backend {
	t.Helper()
	s := open(t)
	require.NoError(t, seed(t.Context(), s))
	return s
}

// serve serves a Page over s on a loopback httptest server, its clock
// fixed at at.
func serve(t *testing.T, s store.Backend, token string, at time.Time) (*page.Page, *httptest.Server) {
	t.Helper()
	p, err := page.New(page.Options{Store: s, Token: token, Now: func() time.Time { return at }})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", p)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return p, srv
}

// client is a browser-like HTTP client with cookies, not following
// redirects (so that tests see them).
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	require.NoError(t, err)
	return do(t, c, req)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, c, req)
}

// do sends req with c and returns the answer, its body read as a string.
func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token in a rendered form.
func csrfOf(t *testing.T, html string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(html)
	require.NotNil(t, m, "the page has a form with a CSRF token")
	return m[1]
}

// loggedIn serves a Page over s, its clock at seedView, and logs a new
// client in with the admin token: the server, the client and the session's
// CSRF token.
func loggedIn(t *testing.T, s store.Backend) (*httptest.Server, *http.Client, string) {
	t.Helper()
	_, srv := serve(t, s, testToken, seedView)
	c := client(t)
	return srv, c, login(t, c, srv)
}

// login logs c in with the admin token and returns a CSRF token of the
// new session.
func login(t *testing.T, c *http.Client, srv *httptest.Server) string {
	t.Helper()
	_, body := get(t, c, srv.URL+"/ui/login")
	resp, _ := post(t, c, srv.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {testToken}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, body = get(t, c, srv.URL+"/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	return csrfOf(t, body)
}

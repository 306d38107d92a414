package page_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/logtest"
)

// Logging out ends the session on the server: the cookie the browser had,
// replayed by whoever kept it, is sent to the login form like no cookie;
// another operator's session goes on.
func TestLogoutEndsTheSessionServerSide(t *testing.T) {
	_, srv := serve(t, seeded(t), testToken, seedView)
	c, other := client(t), client(t)
	csrf := login(t, c, srv)
	login(t, other, srv)
	u, err := url.Parse(srv.URL + "/ui/")
	require.NoError(t, err)
	kept := c.Jar.Cookies(u) // what an attacker who copied the cookie holds
	require.NotEmpty(t, kept)

	resp, _ := post(t, c, srv.URL+"/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	replay := client(t)
	replay.Jar.SetCookies(u, kept)
	resp, _ = get(t, replay, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the cookie of a logged-out session")
	require.Equal(t, "/ui/login", resp.Header.Get("Location"))
	resp, _ = post(t, replay, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"unpark"}, "stream": {"s"}, "id": {"i"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an action with it")

	resp, body := get(t, other, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusOK, resp.StatusCode, "another session: %s", body)
}

// Guessing the token at the login form is slowed per client address: after
// 10 wrong tokens the address gets 429, the right token included, each
// failure and the throttle are logged; the right token still logs in from
// another address.
func TestLoginGuessesAreThrottledPerClient(t *testing.T) {
	var logs logtest.Buffer
	p, err := page.New(page.Options{Store: seeded(t), Token: testToken, Now: func() time.Time { return seedView },
		Logger: logs.Logger()})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", p)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	guesser := from(t, "127.0.0.3")
	_, body := get(t, guesser, srv.URL+"/ui/login")
	csrf := csrfOf(t, body)
	codes := map[int]int{}
	for i := range 30 {
		resp, _ := post(t, guesser, srv.URL+"/ui/login", url.Values{"csrf": {csrf}, "token": {"guess-" + string(rune('a'+i))}})
		codes[resp.StatusCode]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 10, http.StatusTooManyRequests: 20}, codes, "30 guesses from one address")
	resp, _ := post(t, guesser, srv.URL+"/ui/login", url.Values{"csrf": {csrf}, "token": {testToken}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the right token from the throttled address")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	operator := from(t, "127.0.0.4")
	_, body = get(t, operator, srv.URL+"/ui/login")
	resp, _ = post(t, operator, srv.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {testToken}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the right token from another address")

	log := logs.String()
	require.Equal(t, 10, strings.Count(log, "authentication failed"), log)
	require.Equal(t, 1, strings.Count(log, "too many failed authentications"), log)
	require.Contains(t, log, "client=127.0.0.3/32")
	require.NotContains(t, log, testToken)
}

// from is a client (as client) whose connections come from the loopback
// address src.
func from(t *testing.T, src string) *http.Client {
	c := client(t)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c.Transport = &http.Transport{DialContext: d.DialContext}
	return c
}

package page_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

func TestLoginSetsAStrictHttpOnlyCookieScopedToThePage(t *testing.T) {
	_, srv := serve(t, seeded(t), testToken, seedView)
	c := client(t)

	resp, _ := get(t, c, srv.URL+"/ui/registrations")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a view without a session is sent to the login form")
	require.Equal(t, "/ui/login", resp.Header.Get("Location"))

	_, form := get(t, c, srv.URL+"/ui/login")
	csrf := csrfOf(t, form)
	resp, body := post(t, c, srv.URL+"/ui/login", url.Values{"token": {testToken}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a login without the form's CSRF token is refused")
	resp, body = post(t, c, srv.URL+"/ui/login", url.Values{"csrf": {csrf}, "token": {"wrong"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "not the admin token")
	resp, _ = get(t, c, srv.URL+"/ui/")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a wrong token makes no session")

	resp, _ = post(t, c, srv.URL+"/ui/login", url.Values{"csrf": {csrf}, "token": {testToken}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cookie := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		require.Contains(t, cookie, attr)
	}
	require.NotContains(t, cookie, "Secure", "not over plain http")
	require.NotContains(t, cookie, testToken)
	resp, body = get(t, c, srv.URL+"/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.NotContains(t, body, testToken, "the token is never rendered")

	// A session made under another page's key (another daemon, a restart)
	// is not accepted.
	_, other := serve(t, seedtest.SQLite(t), testToken, seedView)
	u, _ := url.Parse(srv.URL + "/ui/")
	ou, _ := url.Parse(other.URL + "/ui/")
	c.Jar.SetCookies(ou, c.Jar.Cookies(u))
	resp, _ = get(t, c, other.URL+"/ui/")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	_, srv := serve(t, seeded(t), testToken, seedView)
	c := client(t)
	for _, path := range []string{"/ui/login", "/ui/", "/ui/static/page.css", "/ui/nope"} {
		resp, _ := get(t, c, srv.URL+path)
		h := resp.Header
		require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'", path)
		require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		require.NotContains(t, h.Get("Content-Security-Policy"), "script-src", path+": no script source is allowed")
		require.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
	}
}

// TestActionWithoutCSRFTokenIsRefused: a POST without the session's CSRF
// token, with another session's, or from another origin is refused with
// 403 and changes nothing.
func TestActionWithoutCSRFTokenIsRefused(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	unpark := url.Values{"action": {"unpark"}, "stream": {"orders/1"}, "id": {"crm"}}

	other := client(t)
	otherCSRF := login(t, other, srv)
	for name, try := range map[string]func() (*http.Response, string){
		"no token": func() (*http.Response, string) { return post(t, c, srv.URL+"/ui/action", unpark) },
		"another session's token": func() (*http.Response, string) {
			return post(t, c, srv.URL+"/ui/action", with(unpark, "csrf", otherCSRF))
		},
		"a token without a cookie": func() (*http.Response, string) {
			return post(t, client(t), srv.URL+"/ui/action", with(unpark, "csrf", csrf))
		},
		"another origin": func() (*http.Response, string) {
			return post(t, c, srv.URL+"/ui/action", with(unpark, "csrf", csrf), "Origin", "https://evil.example")
		},
		"an opaque origin": func() (*http.Response, string) {
			return post(t, c, srv.URL+"/ui/action", with(unpark, "csrf", csrf), "Origin", "null")
		},
		"another site, by Sec-Fetch-Site": func() (*http.Response, string) {
			return post(t, c, srv.URL+"/ui/action", with(unpark, "csrf", csrf), "Sec-Fetch-Site", "cross-site")
		},
	} {
		resp, body := try()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
		require.NotContains(t, body, "Unparked", name)
		st, err := s.Get(t.Context(), "orders/1", "crm")
		require.NoError(t, err)
		require.True(t, st.Parked, "%s: nothing changed", name)
	}

	resp, _ := post(t, c, srv.URL+"/ui/action", with(unpark, "csrf", csrf), "Origin", srv.URL)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "with the token it is done, from the page's own form over plain HTTP (its Origin, no Sec-Fetch-Site)")
	st, err := s.Get(t.Context(), "orders/1", "crm")
	require.NoError(t, err)
	require.False(t, st.Parked)
	evs, err := s.Evidence(t.Context(), "orders/1", "crm", 1)
	require.NoError(t, err)
	require.Equal(t, store.EventUnparked, evs[0].Event, "the store wrote the evidence, as herald unpark")
}

func with(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for kk, vv := range v {
		out[kk] = vv
	}
	out.Set(k, val)
	return out
}

func TestActionsWriteEvidenceAsTheCLI(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { actionsWriteEvidenceAsTheCLI(t, seededOn(t, open)) })
	}
}

func actionsWriteEvidenceAsTheCLI(t *testing.T, s store.Backend) {
	srv, c, csrf := loggedIn(t, s)
	key := url.Values{"stream": {"orders/1"}, "id": {"audit"}, "csrf": {csrf}}

	resp, body := get(t, c, srv.URL+"/ui/confirm?"+url.Values{"action": {"skip"}, "stream": {"orders/1"}, "id": {"audit"}, "to_seq": {"3"}, "reason": {"record 1 and 2 are malformed"}}.Encode())
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "forward to 3")
	resp, _ = post(t, c, srv.URL+"/ui/action", with(with(with(key, "action", "skip"), "to_seq", "3"), "reason", "record 1 and 2 are malformed"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err := s.Get(t.Context(), "orders/1", "audit")
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.NextSeq)
	evs, err := s.Evidence(t.Context(), "orders/1", "audit", 1)
	require.NoError(t, err)
	require.Equal(t, store.EventSkip, evs[0].Event)
	require.Contains(t, evs[0].Error, "record 1 and 2 are malformed")
	require.Equal(t, seedView, evs[0].At.UTC(), "the action's instant is the page's clock")

	resp, _ = post(t, c, srv.URL+"/ui/action", with(with(key, "action", "rewind"), "to_seq", "1"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err = s.Get(t.Context(), "orders/1", "audit")
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.NextSeq)
	evs, err = s.Evidence(t.Context(), "orders/1", "audit", 1)
	require.NoError(t, err)
	require.Equal(t, store.EventRewind, evs[0].Event)

	// Bad input: a clear error naming the field, nothing changed.
	resp, body = get(t, c, srv.URL+"/ui/confirm?action=skip&stream=orders%2F1&id=audit&to_seq=9")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "invalid to_seq: is 9: a skip moves the cursor forward, from #1 to at most #4 (one past the head)")
	resp, body = post(t, c, srv.URL+"/ui/action", with(with(key, "action", "rewind"), "to_seq", "x"))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "to_seq")
	resp, body = post(t, c, srv.URL+"/ui/action", with(with(key, "action", "skip"), "to_seq", "99"))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "nothing was changed")
	resp, _ = post(t, c, srv.URL+"/ui/action", with(with(with(key, "action", "rewind"), "to_seq", "1"), "id", "nobody"))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	st, err = s.Get(t.Context(), "orders/1", "audit")
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.NextSeq)

	// Host reset.
	resp, _ = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"reset-host"}, "host": {seedDownHost}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	hs, err := s.Hosts(t.Context(), store.HostQuery{Host: seedDownHost})
	require.NoError(t, err)
	require.Equal(t, store.HostUp, hs[0].State)
}

// TestNoSecretIsRendered reads every view and finds no token, config
// secret, URL query or capability path segment.
func TestNoSecretIsRendered(t *testing.T) {
	srv, c, _ := loggedIn(t, seeded(t))
	billing := url.Values{"stream": {"orders/1"}, "id": {"billing"}}
	for _, path := range []string{"/ui/", "/ui/registrations", "/ui/registration?" + billing.Encode(), "/ui/hosts",
		"/ui/record?" + url.Values{"id": {"orders/1#1"}}.Encode(),
		"/ui/confirm?" + with(billing, "action", "rewind").Encode() + "&to_seq=1"} {
		resp, body := get(t, c, srv.URL+path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path+": "+body)
		for _, secret := range []string{testToken, seedSecretConfig, seedSecretQuery, seedSecretSegment, "whsec_"} {
			require.NotContains(t, body, secret, path)
		}
	}
	_, body := get(t, c, srv.URL+"/ui/registration?"+billing.Encode())
	require.Contains(t, body, "https://billing.example/hooks/…?…", "the URL is shown redacted")
}

// TestTextThatDoesNotPrintIsShownAsItsCodePoint: a receiver's error with a
// bidirectional override and a terminal escape, and a registration id with
// an override, are shown with each such character as its code point, in
// every view that shows them; the forms keep the id's exact bytes, so an
// action taken from the page acts on that registration.
func TestTextThatDoesNotPrintIsShownAsItsCodePoint(t *testing.T) {
	s := seeded(t)
	const id = "inbox\u202Etxt.exe"
	_, err := s.Register(t.Context(), push.Registration{Stream: "orders/1", ID: id, Namespace: "webhook",
		URL: "https://inbox.example/in"})
	require.NoError(t, err)
	srv, c, csrf := loggedIn(t, s)
	audit := url.Values{"stream": {"orders/1"}, "id": {"audit"}}
	odd := url.Values{"stream": {"orders/1"}, "id": {id}}
	for path, shown := range map[string][]string{
		"/ui/registrations":                                                   {seedReorderingShown, "inbox‹U+202E›txt.exe"},
		"/ui/registration?" + audit.Encode():                                  {"503 Service Unavailable: " + seedReorderingShown, "upstream busy: " + seedReorderingShown},
		"/ui/registration?" + odd.Encode():                                    {`<td id="reg-id">inbox‹U+202E›txt.exe</td>`},
		"/ui/confirm?" + with(odd, "action", "rewind").Encode() + "&to_seq=1": {"inbox‹U+202E›txt.exe"},
	} {
		resp, body := get(t, c, srv.URL+path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path+": "+body)
		for _, want := range shown {
			require.Contains(t, body, want, path)
		}
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, "")
		require.NotContains(t, text, "\u202E", path)
		require.NotContains(t, text, "\u202C", path)
		require.NotContains(t, text, "\x1b", path)
	}
	_, body := get(t, c, srv.URL+"/ui/confirm?"+with(odd, "action", "rewind").Encode()+"&to_seq=1")
	require.Contains(t, body, `<input type="hidden" name="id" value="`+id+`">`, "the form keeps the id's bytes")

	require.NoError(t, s.Skip(t.Context(), "orders/1", id, 2, seedView, "to move it"))
	resp, _ := post(t, c, srv.URL+"/ui/action", with(with(with(odd, "action", "rewind"), "to_seq", "1"), "csrf", csrf))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err := s.Get(t.Context(), "orders/1", id)
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.NextSeq, "the rewind acted on the registration shown")
}

func TestRecordStatusSaysWhoAcknowledged(t *testing.T) {
	s := seeded(t)
	srv, c, _ := loggedIn(t, s)
	resp, body := get(t, c, srv.URL+"/ui/record?"+url.Values{"stream": {"orders/1"}, "seq": {"3"}}.Encode())
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "Acknowledged by 1, not yet by 4.", "archive is past #3; billing, audit, crm and mirror are not")
	resp, body = get(t, c, srv.URL+"/ui/record?seq=x&stream=orders/1")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "seq")
	resp, _ = get(t, c, srv.URL+"/ui/record?id=nope")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestRegistrationsFilterByState(t *testing.T) {
	srv, c, _ := loggedIn(t, seeded(t))
	for state, want := range map[string][]string{
		"parked": {"crm", "legacy"}, "held": {"mirror"}, "retrying": {"audit"}, "idle": {"archive"},
		"ready": {"billing", "events", "registration?id=x&amp;"},
	} {
		resp, body := get(t, c, srv.URL+"/ui/registrations?state="+state)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, len(want), strings.Count(body, `<tr><td><a href="registration?`), state)
		for _, id := range want {
			require.Contains(t, body, id, state)
		}
	}
	resp, body := get(t, c, srv.URL+"/ui/registrations?state=stuck")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "state")
	resp, body = get(t, c, srv.URL+"/ui/registrations?after_stream=orders")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a list after a registration names its stream and id, as the APIs' lists do")
	require.Contains(t, body, "invalid after_id: is missing")
}

// TestOpenPageAnswersOnlyLoopbackHosts: without a token the page is open,
// but a request naming another host (DNS rebinding) is refused.
func TestOpenPageAnswersOnlyLoopbackHosts(t *testing.T) {
	s := seeded(t)
	_, srv := serve(t, s, "", seedView)
	c := client(t)
	resp, body := get(t, c, srv.URL+"/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	_, body = get(t, c, srv.URL+"/ui/confirm?action=unpark&stream=orders/1&id=crm")
	csrf := csrfOf(t, body)

	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/ui/", nil)
	require.NoError(t, err)
	req.Host = "rebound.example:80"
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, _ = post(t, c, srv.URL+"/ui/action", url.Values{"action": {"unpark"}, "stream": {"orders/1"}, "id": {"crm"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "open, but still CSRF-protected")
	resp, _ = post(t, c, srv.URL+"/ui/action", url.Values{"csrf": {csrf}, "action": {"unpark"}, "stream": {"orders/1"}, "id": {"crm"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

// TestSessionsEndAfterTwelveHoursAndAtLogout.
func TestSessionsEndAfterTwelveHoursAndAtLogout(t *testing.T) {
	s := seeded(t)
	var mu sync.Mutex
	now := seedView
	p, err := page.New(page.Options{Store: s, Token: testToken, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", p)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := client(t)
	login(t, c, srv)
	mu.Lock()
	now = now.Add(11 * time.Hour)
	mu.Unlock()
	resp, _ := get(t, c, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusOK, resp.StatusCode, "11 h after the login")
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	resp, _ = get(t, c, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "13 h after the login: log in again")

	csrf := login(t, c, srv)
	resp, _ = post(t, c, srv.URL+"/ui/logout", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "log out needs the CSRF token too")
	resp, _ = post(t, c, srv.URL+"/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = get(t, c, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "logged out")
}

// A parked registration is not attempted until unparked: the lists and its
// view say so where the next attempt goes, never the instant stored with
// it; a retrying one shows its instant.
func TestParkedRowsShowNoNextAttempt(t *testing.T) {
	srv, c, _ := loggedIn(t, seeded(t))
	cells := regexp.MustCompile(`<td class="next-attempt">([^<]*)</td>`)
	resp, body := get(t, c, srv.URL+"/ui/registrations?state=parked")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	got := cells.FindAllStringSubmatch(body, -1)
	require.Len(t, got, 2, "crm and legacy")
	for _, m := range got {
		require.Equal(t, "parked", m[1])
	}
	resp, body = get(t, c, srv.URL+"/ui/registrations?state=retrying")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "2026-03-15 12:00:00Z", cells.FindStringSubmatch(body)[1], "the retrying one shows when")

	next := regexp.MustCompile(`<td id="next-attempt">(.*?)</td>`)
	resp, body = get(t, c, srv.URL+"/ui/registration?stream=orders/1&id=crm")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "none: parked, not attempted until unparked", next.FindStringSubmatch(body)[1])
	resp, body = get(t, c, srv.URL+"/ui/registration?stream=orders/1&id=audit")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, next.FindStringSubmatch(body)[1], "2026-03-15 12:00:00Z")
}

// A HEAD is a read, answered as its GET is: 200 on an open page with no
// session yet, the redirect to the login form on a page with a token; it
// changes nothing.
func TestHeadIsAnsweredAsGet(t *testing.T) {
	for _, token := range []string{"", testToken} {
		_, srv := serve(t, seeded(t), token, seedView)
		for _, path := range []string{"/ui/", "/ui/registrations", "/ui/hosts"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, srv.URL+path, nil)
			require.NoError(t, err)
			resp, err := client(t).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			get, _ := get(t, client(t), srv.URL+path)
			require.Equal(t, get.StatusCode, resp.StatusCode, "token %q: HEAD %s", token, path)
			require.Equal(t, get.Header.Get("Location"), resp.Header.Get("Location"), path)
		}
	}
}

// A registration's view shows its retention bound, and says when it is the
// namespace's default.
func TestRegistrationShowsItsRetentionBound(t *testing.T) {
	srv, c, _ := loggedIn(t, seeded(t))
	cell := regexp.MustCompile(`<td id="retain-max">(.*?)</td>`)
	resp, body := get(t, c, srv.URL+"/ui/registration?stream=orders/1&id=audit")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	got := cell.FindStringSubmatch(body)
	require.NotNil(t, got, body)
	require.True(t, strings.HasPrefix(got[1], store.FormatDays(store.DefaultRetainMax("webhook"))+` <span class="muted">(the namespace's default)</span>`), got[1])
}

// The registrations view lists the subscriptions by stream prefix, each as
// one row with its stream count, and a registration one made names it; a
// token scoped elsewhere sees none.
func TestRegistrationsListSubscriptions(t *testing.T) {
	s := seeded(t)
	_, err := s.Append(t.Context(), "tenant/42/a", journal.Entry{ID: "t42-a", Kind: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Subscribe(t.Context(), store.Subscription{Prefix: "tenant/42/", ID: "t42", Namespace: "webhook", URL: "https://t42.example/"}, store.Subscription{})
	require.NoError(t, err)
	_, err = s.Subscribe(t.Context(), store.Subscription{Prefix: "tenant/43/", ID: "t43", Namespace: "webhook", URL: "https://t43.example/",
		Retry: store.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 2 * time.Hour}, For: 72 * time.Hour}}, store.Subscription{})
	require.NoError(t, err)
	srv, c, _ := loggedIn(t, s)
	resp, body := get(t, c, srv.URL+"/ui/registrations")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Regexp(t, `<tr><td><bdi>tenant/42/</bdi></td><td><bdi>t42</bdi></td><td>webhook</td><td>t42.example:443</td><td>start</td><td>90d</td><td class="retry">the namespace's</td><td class="streams">1</td></tr>`, body)
	require.Contains(t, body, `<td class="retry">--retry-schedule 5s,2h --retry-for 3d</td>`, "a subscription's own retry policy")
	resp, body = get(t, c, srv.URL+"/ui/registration?stream=tenant/42/a&id=t42")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `<td id="subscription">stream prefix <bdi>tenant/42/</bdi>`)
}

// TestAnActivityPubRegistrationShowsItsSignatureScheme: the registration
// page says which HTTP signature scheme an activitypub registration sends,
// pinned or auto, never its key; a webhook's has no such row.
func TestAnActivityPubRegistrationShowsItsSignatureScheme(t *testing.T) {
	s := seeded(t)
	for id, cfg := range map[string]string{
		"pinned": `{"key_id":"https://example.com/users/alice#main-key","private_key":"PEM-SECRET","signature_scheme":"cavage"}`,
		"auto":   `{"key_id":"https://example.com/users/alice#main-key","private_key":"PEM-SECRET"}`,
	} {
		_, err := s.Register(t.Context(), push.Registration{Stream: "actor/alice", ID: id, Namespace: "activitypub",
			URL: "https://remote.example/inbox/" + id, Config: push.Config(cfg)})
		require.NoError(t, err)
	}
	srv, c, _ := loggedIn(t, s)
	for id, want := range map[string]string{
		"pinned": `<td id="signature-scheme">cavage (pinned)</td>`,
		"auto":   `<td id="signature-scheme">auto: RFC 9421 first, draft-cavage when the host refuses it</td>`,
	} {
		resp, body := get(t, c, srv.URL+"/ui/registration?"+url.Values{"stream": {"actor/alice"}, "id": {id}}.Encode())
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, want)
		require.NotContains(t, body, "PEM-SECRET")
	}
	_, body := get(t, c, srv.URL+"/ui/registration?"+url.Values{"stream": {"orders/1"}, "id": {"billing"}}.Encode())
	require.NotContains(t, body, "signature-scheme")
}

// TestPauseAndResumeFromThePage: the registration view offers pause, the
// confirmation says who and why (escaped), the action pauses through the
// store, the view shows it paused and offers resume, which resumes it.
func TestPauseAndResumeFromThePage(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	_, body := get(t, c, srv.URL+"/ui/registration?stream=orders/1&id=crm")
	require.Contains(t, body, `id="pause"`)
	require.NotContains(t, body, `id="resume"`)
	_, body = get(t, c, srv.URL+"/ui/confirm?action=pause&stream=orders/1&id=crm&by=alice&reason=%3Cb%3Edeploy")
	require.Contains(t, body, `paused by "<bdi>alice</bdi>"`)
	require.Contains(t, body, "&lt;b&gt;deploy", "the reason is escaped")
	pause := url.Values{"csrf": {csrf}, "action": {"pause"}, "stream": {"orders/1"}, "id": {"crm"}, "by": {"alice"}, "reason": {"deploy"}}
	resp, _ := post(t, c, srv.URL+"/ui/action", pause, "Origin", srv.URL)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err := s.Get(t.Context(), "orders/1", "crm")
	require.NoError(t, err)
	require.True(t, st.Paused)
	require.Equal(t, "paused by alice: deploy", st.LastError)
	_, body = get(t, c, srv.URL+"/ui/registration?stream=orders/1&id=crm")
	require.Contains(t, body, `<span class="state paused" id="state">paused</span>`)
	require.Contains(t, body, `id="resume"`)
	require.NotContains(t, body, `id="unpark"`, "a pause ends with resume, not unpark")

	resume := url.Values{"csrf": {csrf}, "action": {"resume"}, "stream": {"orders/1"}, "id": {"crm"}}
	resp, _ = post(t, c, srv.URL+"/ui/action", resume, "Origin", srv.URL)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err = s.Get(t.Context(), "orders/1", "crm")
	require.NoError(t, err)
	require.False(t, st.Paused)
	require.False(t, st.Parked)
	evs, err := s.Evidence(t.Context(), "orders/1", "crm", 1)
	require.NoError(t, err)
	require.Equal(t, "resumed by an operator (page)", evs[0].Error)
}

// TestResumingARegistrationHeldForItsHostSaysItWaitsForTheProbe: the confirm
// page and the answer after a resume say that a registration whose host is
// down is held until the host's next probe, not due now.
func TestResumingARegistrationHeldForItsHostSaysItWaitsForTheProbe(t *testing.T) {
	s := seeded(t)
	srv, c, csrf := loggedIn(t, s)
	hs, err := s.Hosts(t.Context(), store.HostQuery{Host: seedDownHost})
	require.NoError(t, err)
	probe := operator.Instant(hs[0].NextProbeAt)
	key := url.Values{"stream": {"orders/1"}, "id": {"mirror"}, "csrf": {csrf}}
	resp, _ := post(t, c, srv.URL+"/ui/action", with(with(key, "action", "pause"), "by", "alice"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	resp, body := get(t, c, srv.URL+"/ui/confirm?"+with(with(key, "action", "resume"), "by", "alice").Encode())
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "Resume it: its host is down, so it is held until the host's next probe at "+probe+", then due at its cursor")
	require.NotContains(t, body, "due now")

	resp, _ = post(t, c, srv.URL+"/ui/action", with(with(key, "action", "resume"), "by", "alice"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, body = get(t, c, srv.URL+resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "Resumed: held for host down.example:443 (down) until its next probe at "+probe+", then due at its cursor")
	require.NotContains(t, body, "due now")
}

// TestResendingARecordQueuedAlreadySaysThatResendStays: asked again while
// queued, the page says the queued resend stays and goes out once, and
// nothing changed.
func TestResendingARecordQueuedAlreadySaysThatResendStays(t *testing.T) {
	s := seeded(t)
	require.NoError(t, s.Skip(t.Context(), "orders/1", "audit", 3, seedView, "acknowledged, for the test"))
	srv, c, csrf := loggedIn(t, s)
	ask := url.Values{"stream": {"orders/1"}, "id": {"audit"}, "csrf": {csrf}, "action": {"resend"}, "seq": {"1"}, "by": {"alice"}}
	for _, want := range []string{"Resend queued: the next sweep", "That resend was queued already: it stays and goes out once; nothing changed."} {
		resp, _ := post(t, c, srv.URL+"/ui/action", ask)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		resp, body := get(t, c, srv.URL+resp.Header.Get("Location"))
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, want)
	}
}

// The hosts page shows the signature scheme a host accepted after refusing
// the other, as herald hosts does.
func TestHostsPageShowsAHostsSignatureScheme(t *testing.T) {
	s := seeded(t)
	require.NoError(t, s.SetHostScheme(t.Context(), "inbox.example:443", "cavage", seedView))
	srv, c, _ := loggedIn(t, s)
	resp, body := get(t, c, srv.URL+"/ui/hosts")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Regexp(t, `<td>inbox\.example:443</td>.*<td class="scheme">cavage</td>`, body)
}

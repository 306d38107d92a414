package page_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	stdpng "image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/internal/seedtest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

// installChromium is what a machine without a browser needs.
const installChromium = "apt-get install -y chromium"

// chromium returns the path of a Chromium binary. Without one the test
// fails at once, naming the command that installs it (./test.sh runs it):
// the browser is a dependency of the tests, as PostgreSQL's server binaries
// are. A test that prepares long before its browser steps calls it first.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found on PATH (chromium, chromium-browser, google-chrome, headless-shell): run ./test.sh, which installs it, or `" + installChromium + "`, to run the page's browser tests")
	return ""
}

// browser returns a headless Chromium context of a window of w×h pixels
// (chromium's failure without one).
func browser(t *testing.T, size ...int) context.Context {
	t.Helper()
	path := chromium(t)
	size = append(size, 1280, 900)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(size[0], size[1]))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", path) // binds the browser to ctx
	// A network timeout, not synchronisation: the browser steps of one
	// test must end within it.
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

// browserLogin logs the browser in through the form.
func browserLogin(t *testing.T, ctx context.Context, srv *httptest.Server, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
	))
	if token == testToken {
		// Logged in when the page after the form has the log-out button.
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("logout"))))
	}
}

// browse serves a Page over s, its clock at at, and logs the browser in
// with the admin token.
func browse(t *testing.T, ctx context.Context, s store.Backend, at time.Time) *httptest.Server {
	t.Helper()
	_, srv := serve(t, s, testToken, at)
	browserLogin(t, ctx, srv, testToken)
	return srv
}

// TestBrowserOverviewRendersTheSeededStates: the overview of a seeded
// database shows each namespace's counts by state and records behind.
func TestBrowserOverviewRendersTheSeededStates(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { overviewRendersTheSeededStates(t, seededOn(t, open)) })
	}
}

func overviewRendersTheSeededStates(t *testing.T, s store.Backend) {
	ctx := browser(t)
	browse(t, ctx, s, seedView)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("ns-webhook"))))
	for ns, want := range seedExpected {
		got := map[string]int{}
		for _, state := range []string{"ready", "retrying", "held", "parked", "idle", "behind"} {
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`#ns-%s [data-state=%q]`, ns, state))))
			require.NoError(t, err)
			n, err := strconv.Atoi(strings.TrimSpace(text))
			require.NoError(t, err, "%s %s: %q", ns, state, text)
			got[state] = n
		}
		require.Equal(t, map[string]int{"ready": want.Ready, "retrying": want.Retrying, "held": want.Held, "parked": want.Parked,
			"idle": want.Idle, "behind": want.Behind}, got, ns)
	}
	hosts, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("hosts-not-up")))
	require.NoError(t, err)
	require.Contains(t, hosts, seedDownHost)
	require.Contains(t, hosts, "down")
}

// TestBrowserAnEmptyChartSaysSoWithinItsBox: before the first sample each
// chart says it has none, every word inside the chart's box (the sentence
// ran past the box's edge, cut after "since the").
func TestBrowserAnEmptyChartSaysSoWithinItsBox(t *testing.T) {
	ctx := browser(t)
	browse(t, ctx, seeded(t), seedView)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("ns-webhook"))))
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("svg.chart")].flatMap(svg => {
		const box = svg.querySelector("rect").getBBox();
		return [...svg.querySelectorAll("text")].filter(t => t.textContent.includes("no samples")).map(t => {
			const b = t.getBBox();
			return (b.x + b.width <= box.x + box.width ? "inside: " : "past the box: ") + t.textContent;
		});
	})`))
	require.NoError(t, err)
	require.NotEmpty(t, out, "the charts start empty and say so")
	for _, line := range out {
		require.True(t, strings.HasPrefix(line, "inside: "), line)
	}
}

// TestBrowserHostileErrorBodyIsShownAsText: a receiver's body and error
// with script and an onerror image, and a stream name that is markup, are
// shown as text; no element is made of them and no script runs. An error
// with a bidirectional override shows it as its code point.
func TestBrowserHostileErrorBodyIsShownAsText(t *testing.T) {
	ctx := browser(t)
	srv := browse(t, ctx, seeded(t), seedView)
	for _, path := range []string{
		"/ui/registration?stream=orders%2F1&id=crm",
		"/ui/",
		"/ui/registrations",
		"/ui/registration?stream=" + strings.ReplaceAll(seedHostileStream, "/", "%2F") + "&id=x",
	} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+path), chromedp.WaitReady(chromedp.CSS("main"))), path)
		title, err := chromedp.Run(ctx, chromedp.Title())
		require.NoError(t, err)
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		require.NoError(t, err)
		made, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main script, main img, svg[onload], [onerror]").length`))
		require.NoError(t, err)
		pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
		require.NoError(t, err)
		require.NotContains(t, title, "Not Found", path)
		require.False(t, pwned, "%s: no script ran", path)
		require.Zero(t, made, "%s: no element was made of a stored value", path)
		switch path {
		case "/ui/registration?stream=orders%2F1&id=crm":
			require.Contains(t, text, seedHostile, "the body is shown whole, as text")
		case "/ui/registrations":
			require.Contains(t, text, seedHostileStream)
			require.Contains(t, text, seedReorderingShown, "an override is shown as its code point")
			require.NotContains(t, text, "\u202E", "no override reaches the page's text")
		}
	}
}

// receiver is a loopback webhook receiver whose answer the test sets.
type receiver struct {
	mu     sync.Mutex
	status int
	got    []string // webhook-id of each accepted message
	srv    *httptest.Server
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.status/100 == 2 {
			r.got = append(r.got, req.Header.Get("webhook-id"))
		}
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) answer(status int) { r.mu.Lock(); r.status = status; r.mu.Unlock() }

func (r *receiver) accepted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// hook appends n records to stream (ids prefix-1 … prefix-n, payloads
// {"n":i}) and registers id on it: a webhook to the receiver's /hook.
func (r *receiver) hook(t *testing.T, s store.Backend, stream, id, prefix string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		_, err := s.Append(t.Context(), stream, journal.Entry{ID: fmt.Sprintf("%s-%d", prefix, i), Kind: "order.updated",
			ContentType: "application/json", Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
		require.NoError(t, err)
	}
	_, err := s.Register(t.Context(), push.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: r.srv.URL + "/hook",
		Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)})
	require.NoError(t, err)
}

// loopbackWorker is a webhook worker that delivers to loopback receivers.
func loopbackWorker(t *testing.T, s store.Backend, opts ...push.Option) *push.Worker {
	t.Helper()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
	require.NoError(t, err)
	w, err := push.NewWorker(s, s, tr, webhook.New(), opts...)
	require.NoError(t, err)
	return w
}

// TestBrowserLoginWithAWrongTokenIsRefused.
func TestBrowserLoginWithAWrongTokenIsRefused(t *testing.T) {
	ctx := browser(t)
	_, srv := serve(t, seeded(t), testToken, seedView)
	browserLogin(t, ctx, srv, "not-"+testToken)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("login-error"))))
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("login-error")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui/registrations"), chromedp.WaitVisible(chromedp.ID("token"))))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	views, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.regs").length`))
	require.NoError(t, err)
	require.Contains(t, msg, "not the admin token")
	require.True(t, strings.HasSuffix(loc, "/ui/login"), loc)
	require.Zero(t, views)
}

// TestBrowserRightToLeftNamesKeepTheirPlace: a stream named in a
// right-to-left script is shown where the page writes it, before its
// registration's id, on the confirm page and in the overview's oldest
// parked: each stored value is isolated (bdi, unicode-bidi: isolate), so
// its direction does not carry over to its neighbours (a review found
// "Registration 42 · שלום" for stream שלום, id 42).
func TestBrowserRightToLeftNamesKeepTheirPlace(t *testing.T) {
	ctx := browser(t)
	s := seedtest.SQLite(t)
	const stream, id = "שלום", "42"
	_, err := s.Append(t.Context(), stream, journal.Entry{ID: "rtl-1", Kind: "k", ContentType: "application/json", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = s.Register(t.Context(), push.Registration{Stream: stream, ID: id, Namespace: "webhook", URL: "https://rtl.example/in"})
	require.NoError(t, err)
	b, err := s.Due(t.Context(), store.DueQuery{At: seedT0, Limit: 1, Namespace: "webhook", Owner: "w", LeaseUntil: seedT0.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, b.Registrations, 1)
	require.NoError(t, s.Park(t.Context(), b.Registrations[0].Claim(), 1, store.Evidence{At: seedT0, Event: store.EventParked, Seq: 1, Status: 410, Error: "410 Gone"}))
	srv := browse(t, ctx, s, seedView)
	key := url.Values{"action": {"unpark"}, "stream": {stream}, "id": {id}}
	for _, c := range []struct{ path, sel string }{
		{"/ui/confirm?" + key.Encode(), "main p strong"}, // Registration <strong>stream</strong> · <strong>id</strong>
		{"/ui/", "main p a bdi"},                         // the oldest parked: stream · id
	} {
		path, sel := c.path, c.sel
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+path), chromedp.WaitReady(chromedp.CSS("main"))), path)
		order, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const els = [...document.querySelectorAll(`+strconv.Quote(sel)+`)].slice(0, 2);
			return els.sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left).map(e => e.textContent);
		})()`))
		require.NoError(t, err, path)
		require.Equal(t, []string{stream, id}, order, "%s: left to right on the screen", path)
	}
}

var screenshots = flag.Bool("screenshots", false, "write the README's pictures of the page to docs/page/*.png")

// TestScreenshots renders every view of a seeded database (an hour of
// deliveries for the charts) in headless Chromium and checks each picture
// is a whole PNG; with -screenshots it writes them as the README's
// pictures, docs/page/*.png:
//
//	go test ./daemon/page -run TestScreenshots -screenshots
func TestScreenshots(t *testing.T) {
	chromium(t) // before the hour of samples below
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "page")
	}
	s := seedtest.SQLite(t)
	p, srv := serve(t, s, "", seedView)
	liveHour(t, s, p)
	require.NoError(t, seed(t.Context(), s))
	_, locked := serve(t, s, "screenshot", seedView) // for the login form
	ctx := browser(t, 1200, 700)
	for _, v := range []struct{ name, url string }{
		{"overview", srv.URL + "/ui/"},
		{"registrations", srv.URL + "/ui/registrations?namespace=webhook"},
		{"registration", srv.URL + "/ui/registration?stream=orders%2F1&id=crm"},
		{"confirm", srv.URL + "/ui/confirm?action=skip&stream=orders%2F1&id=crm&to_seq=2&reason=record+1+is+malformed"},
		{"hosts", srv.URL + "/ui/hosts"},
		{"record", srv.URL + "/ui/record?stream=orders%2F1&seq=2"},
		{"login", locked.URL + "/ui/login"},
	} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(v.url), chromedp.WaitReady(chromedp.CSS("main"))), v.name)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err, v.name)
		img, err := stdpng.Decode(bytes.NewReader(png))
		require.NoError(t, err, "%s: a whole PNG", v.name)
		require.GreaterOrEqual(t, img.Bounds().Dx(), 1200, "%s: at least the window's width", v.name)
		require.GreaterOrEqual(t, img.Bounds().Dy(), 200, "%s: a view, not an empty strip", v.name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, v.name+".png"), png, 0o644))
	}
}

// liveHour gives the charts an hour of history: each minute of the hour
// before seedView some records are appended to orders/live, the page
// samples, and a sweep delivers them to a loopback receiver.
func liveHour(t *testing.T, s store.Backend, p *page.Page) {
	rcv := newReceiver(t, http.StatusNoContent)
	_, err := s.Register(t.Context(), push.Registration{Stream: "orders/live", ID: "warehouse", Namespace: "webhook", URL: rcv.srv.URL + "/hook",
		Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)})
	require.NoError(t, err)
	w := loopbackWorker(t, s, push.WithHooks(p.Hooks("webhook", push.Hooks{})))
	n := 0
	for i := range 60 {
		at := seedView.Add(time.Duration(i-60) * time.Minute)
		for range 20 + (i*37)%50 + i {
			n++
			_, err := s.Append(t.Context(), "orders/live", journal.Entry{ID: fmt.Sprintf("live-%d", n), Kind: "order.updated", Payload: fmt.Appendf(nil, `{"n":%d}`, n)})
			require.NoError(t, err)
		}
		require.NoError(t, p.Sample(t.Context(), at))
		_, err := w.RunOnce(t.Context(), at.Add(time.Second), 10)
		require.NoError(t, err)
	}
	require.NoError(t, p.Sample(t.Context(), seedView))
}

// Command screenshots makes the README's pictures of the operator's page:
// it seeds a throwaway SQLite database (daemon/page/internal/seed, and an
// hour of deliveries to a loopback receiver for the charts), serves the
// page on loopback and saves a PNG of each view with headless Chromium.
//
//	go run ./daemon/page/internal/screenshots            # writes docs/page/*.png
//	go run ./daemon/page/internal/screenshots -out DIR
//
// It needs a Chromium binary (apt-get install -y chromium).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldpush/herald/daemon/page"
	"github.com/heraldpush/herald/daemon/page/internal/seed"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/sqlite"
	"github.com/heraldpush/herald/transport"
)

func main() {
	out := flag.String("out", "docs/page", "directory for the PNGs")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "herald-screenshots")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(ctx, filepath.Join(dir, "herald.db"))
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := page.New(page.Options{Store: s, Now: func() time.Time { return seed.View }})
	if err != nil {
		return err
	}
	if err := liveHour(ctx, s, p); err != nil {
		return err
	}
	if err := seed.Seed(ctx, s); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", p)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// The login form needs a page with a token.
	locked, err := page.New(page.Options{Store: s, Token: "screenshot", Now: func() time.Time { return seed.View }})
	if err != nil {
		return err
	}
	lmux := http.NewServeMux()
	lmux.Handle("/ui/", locked)
	lsrv := httptest.NewServer(lmux)
	defer lsrv.Close()

	path, err := chromium()
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(1200, 700))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		return fmt.Errorf("start Chromium at %s: %w", path, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, v := range []struct{ name, url string }{
		{"overview", srv.URL + "/ui/"},
		{"registrations", srv.URL + "/ui/registrations?namespace=webhook"},
		{"registration", srv.URL + "/ui/registration?stream=orders%2F1&id=crm"},
		{"confirm", srv.URL + "/ui/confirm?action=skip&stream=orders%2F1&id=crm&to_seq=2&reason=record+1+is+malformed"},
		{"hosts", srv.URL + "/ui/hosts"},
		{"record", srv.URL + "/ui/record?stream=orders%2F1&seq=2"},
		{"login", lsrv.URL + "/ui/login"},
	} {
		tctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		err := chromedp.Do(tctx, chromedp.Navigate(v.url), chromedp.WaitReady(chromedp.CSS("main")))
		var png []byte
		if err == nil {
			png, err = chromedp.Run(tctx, chromedp.FullScreenshot(100))
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		file := filepath.Join(out, v.name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s (%d KiB)\n", file, len(png)/1024)
	}
	return nil
}

// liveHour gives the charts an hour of history: each minute of the hour
// before seed.View some records are appended to orders/live, the page
// samples, and a sweep delivers them to a loopback receiver.
func liveHour(ctx context.Context, s *sqlite.Store, p *page.Page) error {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer rcv.Close()
	if _, err := s.Register(ctx, push.Registration{Stream: "orders/live", ID: "warehouse", Namespace: "webhook", URL: rcv.URL + "/hook",
		Config: push.Config(`{"secrets":["` + seed.SecretConfig + `"]}`)}); err != nil {
		return err
	}
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	w, err := push.NewWorker(s, s, tr, webhook.New(), push.WithHooks(p.Hooks("webhook", push.Hooks{})))
	if err != nil {
		return err
	}
	n := 0
	for i := range 60 {
		at := seed.View.Add(time.Duration(i-60) * time.Minute)
		for range 20 + (i*37)%50 + i {
			n++
			if _, err := s.Append(ctx, "orders/live", journal.Entry{ID: fmt.Sprintf("live-%d", n), Kind: "order.updated",
				Payload: fmt.Appendf(nil, `{"n":%d}`, n)}); err != nil {
				return err
			}
		}
		if err := p.Sample(ctx, at); err != nil {
			return err
		}
		if _, err := w.RunOnce(ctx, at.Add(time.Second), 10); err != nil {
			return err
		}
	}
	return p.Sample(ctx, seed.View)
}

func chromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium on PATH: install it with apt-get install -y chromium")
}

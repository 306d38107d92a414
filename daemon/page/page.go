package page

import (
	"cmp"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Store is what the page reads and acts on: the journal (heads, record
// lookups) and the push store with host health over one database.
type Store interface {
	journal.Journal
	push.Store
}

// Options configure a Page. Store is required.
type Options struct {
	Store Store
	// Token is the admin token (HERALD_ADMIN_TOKEN): when set, every view
	// and action needs a session made by logging in with it; when empty the
	// page is open, to loopback names only (package doc).
	Token string
	// Now is the clock of operator actions, samples and sessions (default
	// time.Now).
	Now func() time.Time
	// Logger gets the page's store errors (default slog.Default()).
	Logger *slog.Logger
}

// Prefix is the path the page, and its session cookie, are under.
const Prefix = "/ui/"

// sessionTTL is how long a login lasts: a working day of an on-call shift,
// after which the operator types the token again.
const sessionTTL = 12 * time.Hour

// Page is the operator's page: an http.Handler serving the views and
// actions under its prefix, and the sampler that feeds its charts.
type Page struct {
	store Store
	token string
	now   func() time.Time
	log   *slog.Logger
	key   [32]byte // signs sessions and derives CSRF tokens; new per Page
	tmpl  map[string]*template.Template
	mux   *http.ServeMux

	mu        sync.Mutex
	samples   []sample          // the last maxSamples, oldest first
	delivered map[string]uint64 // deliveries per namespace since start (Hooks)
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a Page over opts.Store. Errors: a nil Store.
func New(opts Options) (*Page, error) {
	if opts.Store == nil {
		return nil, errors.New("page: Options.Store is nil")
	}
	p := &Page{store: opts.Store, token: opts.Token, now: opts.Now, log: cmp.Or(opts.Logger, slog.Default()),
		delivered: map[string]uint64{}}
	if p.now == nil {
		p.now = time.Now
	}
	rand.Read(p.key[:]) // crypto/rand never fails: it crashes the program first
	if err := p.parseTemplates(); err != nil {
		return nil, err
	}
	p.routes()
	return p, nil
}

func (p *Page) parseTemplates() error {
	funcs := template.FuncMap{
		"time":   operator.Instant,
		"ago":    func(t time.Time) string { return ago(p.now(), t) },
		"path":   func(s string) string { return Prefix + s },
		"pct":    pct,
		"chart":  chartSVG,
		"dur":    table.Duration,
		"link":   func(v operator.RegistrationView) string { return link(v.Stream, v.ID) },
		"filter": func(ns, state string) string { return href("registrations", "namespace", ns, "state", state) },
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	p.tmpl = map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("page: template %s: %w", n, err)
		}
		p.tmpl[base] = t
	}
	return nil
}

func (p *Page) routes() {
	m := http.NewServeMux()
	pre := strings.TrimSuffix(Prefix, "/")
	m.HandleFunc("GET "+pre+"/{$}", p.authed(p.overview))
	m.HandleFunc("GET "+pre+"/registrations", p.authed(p.registrations))
	m.HandleFunc("GET "+pre+"/registration", p.authed(p.registration))
	m.HandleFunc("GET "+pre+"/hosts", p.authed(p.hosts))
	m.HandleFunc("GET "+pre+"/record", p.authed(p.record))
	m.HandleFunc("GET "+pre+"/confirm", p.authed(p.confirm))
	m.HandleFunc("POST "+pre+"/action", p.authed(p.csrf(p.action)))
	m.HandleFunc("GET "+pre+"/login", p.loginForm)
	m.HandleFunc("POST "+pre+"/login", p.csrf(p.login))
	m.HandleFunc("POST "+pre+"/logout", p.authed(p.csrf(p.logout)))
	static, _ := fs.Sub(staticFS, "static") // embedded: it is there
	m.Handle("GET "+pre+"/static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(static)))
	m.HandleFunc("GET "+pre, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	})
	p.mux = m
}

// ServeHTTP serves the page's views and actions under its prefix, with the
// security headers on every answer.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No script at all: the page works without JavaScript, so none may run,
	// inline or not; styles and images only from the page itself.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if p.token == "" && !operator.LoopbackHost(r.Host) {
		// Open only to loopback: a page on another name reaching this one
		// through DNS rebinding would otherwise read it and act on it.
		p.fail(w, r, http.StatusForbidden, "Without an admin token the page answers only on a loopback address (127.0.0.1, ::1, localhost): set HERALD_ADMIN_TOKEN to serve it on "+r.Host+".")
		return
	}
	p.mux.ServeHTTP(w, r)
}

// render writes template name with data, or a 500 naming nothing secret.
func (p *Page) render(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any) {
	t, ok := p.tmpl[name]
	if !ok {
		http.Error(w, "no such view", http.StatusInternalServerError)
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["View"] = name
	if s, ok := sessionOf(r); ok {
		data["CSRF"] = p.csrfToken(s)
		data["LoggedIn"] = s.authed && p.token != ""
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		p.log.Error("herald page: render", "view", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(visible(b.String())))
}

// fail renders an error page with a status and a message in words.
func (p *Page) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p.render(w, r, code, "error", map[string]any{"Title": http.StatusText(code), "Code": code, "Message": msg})
}

// failErr renders err: 400 for bad input, 404 for what is not there, else
// 500 (logged).
func (p *Page) failErr(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, journal.ErrInvalid):
		p.fail(w, r, http.StatusBadRequest, err.Error())
	case errors.Is(err, journal.ErrNotFound):
		p.fail(w, r, http.StatusNotFound, err.Error())
	default:
		p.log.Error("herald page: store", "path", r.URL.Path, "err", err)
		p.fail(w, r, http.StatusInternalServerError, "the store failed: "+err.Error())
	}
}

// visible returns html, as html/template rendered it, with every
// table.Hidden character of its text shown as its code point, ‹U+202E›, as
// the CLI's tables show it, so that a stored value (a receiver's error
// body, a producer's stream name) cannot rearrange or hide the text around
// it. Attribute values keep their bytes, so that an action still names the
// registration it was shown for. html/template escapes '<' and '>' in every
// value it writes, so each '<' of its output opens a template's own tag,
// and the first '>' after it closes that tag.
func visible(html string) string {
	if strings.IndexFunc(html, table.Hidden) < 0 {
		return html
	}
	var b strings.Builder
	b.Grow(len(html) + 16)
	inTag := false
	for i, r := range html {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
		case !inTag && table.Hidden(r): // tabs and line breaks stay: a body is shown in a <pre>
			b.WriteString(table.CodePoint(r))
			continue
		}
		// The bytes as they were: a byte that is not UTF-8 stays one.
		_, n := utf8.DecodeRuneInString(html[i:])
		b.WriteString(html[i : i+n])
	}
	return b.String()
}

package page

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/heraldpush/herald/daemon/internal/throttle"
	"github.com/heraldpush/herald/daemon/internal/web"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/store"
)

// Options configure a Page. Store is required.
type Options struct {
	Store store.Backend
	// Token is the admin token (HERALD_ADMIN_TOKEN); empty, the page is
	// open to loopback names only (package doc, "Security").
	Token string
	// Now is the clock of operator actions, samples and sessions (default
	// time.Now).
	Now func() time.Time
	// Logger gets the page's store errors and failed logins (default
	// slog.Default()).
	Logger *slog.Logger
	// Throttle counts failed logins per client (nil: one of the page's
	// own); the daemon shares its APIs' with the page.
	Throttle *throttle.Throttle
	// BehindProxy says a proxy in front terminates TLS: the client is the
	// last address of X-Forwarded-For, and the cookie is Secure when
	// X-Forwarded-Proto is https.
	BehindProxy bool
}

// Prefix is the path the page, and its session cookie, are under.
const Prefix = "/ui/"

// sessionTTL is how long a login lasts: a working day of an on-call shift,
// after which the operator types the token again.
const sessionTTL = 12 * time.Hour

// Page is the operator's page: an http.Handler serving the views and
// actions under its prefix, and the sampler that feeds its charts.
type Page struct {
	store store.Backend
	token string
	now   func() time.Time
	log   *slog.Logger
	key   [32]byte // signs sessions and derives CSRF tokens; new per Page
	tmpl  map[string]*template.Template
	mux   *http.ServeMux

	throttle    *throttle.Throttle
	behindProxy bool
	sessions    sessions
	auth        operator.Authenticator

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
		delivered: map[string]uint64{}, tmpl: map[string]*template.Template{}, mux: http.NewServeMux(),
		throttle: opts.Throttle, behindProxy: opts.BehindProxy, sessions: sessions{byID: map[[16]byte]held{}}}
	if p.now == nil {
		p.now = time.Now
	}
	p.auth = operator.Authenticator{Store: opts.Store, Now: p.now, Log: p.log,
		Static: []operator.Static{{Secret: opts.Token, Role: store.RoleAdmin, Name: "HERALD_ADMIN_TOKEN"}}}
	if p.throttle == nil {
		p.throttle = throttle.New(p.now, p.log)
	}
	rand.Read(p.key[:]) // crypto/rand never fails: it crashes the program first
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
	names, _ := fs.Glob(templateFS, "templates/*.html") // the pattern is valid
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("page: template %s: %w", n, err)
		}
		p.tmpl[base] = t
	}
	m, pre := p.mux, strings.TrimSuffix(Prefix, "/")
	for pattern, h := range p.routes() {
		m.HandleFunc(pattern, h)
	}
	static, _ := fs.Sub(staticFS, "static") // embedded: it is there
	m.Handle("GET "+pre+"/static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(static)))
	m.Handle("GET "+pre, http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	return p, nil
}

// ServeHTTP serves the page's views and actions under its prefix, with the
// security headers on every answer.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no Referer leaves the page; its own forms' POSTs carry their Origin
	h.Set("Cache-Control", "no-store")
	if p.token == "" && !web.LoopbackHost(r.Host) {
		p.fail(w, r, http.StatusForbidden, "Without an admin token the page answers only on a loopback address (127.0.0.1, ::1, localhost): set HERALD_ADMIN_TOKEN to serve it on "+r.Host+".")
		return
	}
	p.mux.ServeHTTP(w, r)
}

// render writes template name with data, or a 500 naming nothing secret.
func (p *Page) render(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any) {
	data["View"] = name
	if s, ok := sessionOf(r); ok {
		data["CSRF"] = p.csrfToken(s)
		data["LoggedIn"] = s.authed && p.token != ""
	}
	tok := operator.TokenOf(r.Context())
	data["Who"], data["Scoped"], data["Operator"] = tok, len(tok.Scope) > 0, tok.Role.Covers(store.RoleOperator)
	var b strings.Builder
	if err := p.tmpl[name].Execute(&b, data); err != nil {
		p.log.Error("herald page: render", "view", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(visible(b.String())))
}

func (p *Page) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p.render(w, r, code, "error", map[string]any{"Title": http.StatusText(code), "Code": code, "Message": msg})
}

// failErr renders err with web.HTTPStatus's status; a 500 is logged.
func (p *Page) failErr(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := web.HTTPStatus(err), err.Error()
	if code == http.StatusInternalServerError {
		p.log.Error("herald page: store", "path", r.URL.Path, "err", err)
		msg = "the store failed: " + msg
	}
	p.fail(w, r, code, msg)
}

// visible returns html, as html/template rendered it, with every
// table.Hidden character of its text shown as its code point (package doc);
// attribute values keep their bytes, so that an action still names the
// registration it was shown for. html/template escapes '<' and '>' in every
// value, so each '<' of its output opens a tag of its own.
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

// The cookie carries a random nonce, its issue instant and whether it
// logged in, signed with the Page's key; the CSRF token is another HMAC of
// the nonce. A visitor's session before login is stateless (it grants
// nothing but the login form's CSRF token); a logged-in one is valid only
// while the Page holds its nonce (sessions), so logging out ends it
// server-side, whoever kept the cookie.

const cookieName = "herald_session"

type session struct {
	nonce  [16]byte
	issued time.Time
	authed bool
	hash   [sha256.Size]byte // of the token it logged in with, when authed
}

type sessionKey struct{}

func sessionOf(r *http.Request) (session, bool) {
	s, ok := r.Context().Value(sessionKey{}).(session)
	return s, ok
}

func withSession(r *http.Request, s session) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
}

func (p *Page) mac(label string, b []byte) []byte {
	m := hmac.New(sha256.New, p.key[:])
	m.Write([]byte(label))
	m.Write(b)
	return m.Sum(nil)
}

// csrfToken is the session's CSRF token: HMAC("csrf", nonce), base64url.
func (p *Page) csrfToken(s session) string {
	return base64.RawURLEncoding.EncodeToString(p.mac("csrf", s.nonce[:]))
}

// readSession returns the request's valid, unexpired session, if any.
func (p *Page) readSession(r *http.Request) (session, bool) {
	var body, sig string // the cookie: base64url(nonce, issued, authed) "." base64url(its HMAC)
	if c, err := r.Cookie(cookieName); err == nil {
		body, sig, _ = strings.Cut(c.Value, ".")
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	m, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || len(b) != 25 || !hmac.Equal(m, p.mac("session", b)) {
		return session{}, false
	}
	var s session
	copy(s.nonce[:], b[:16])
	s.issued = time.Unix(int64(binary.BigEndian.Uint64(b[16:24])), 0)
	s.authed = b[24] == 1
	if age := p.now().Sub(s.issued); age > sessionTTL || age < -time.Minute {
		return session{}, false
	}
	if s.authed {
		h, ok := p.sessions.live(s.nonce, p.now())
		if !ok {
			return session{}, false // logged out, or from before a restart
		}
		s.hash = h.hash
	}
	return s, true
}

// maxSessions bounds the logged-in sessions held: each login adds one,
// for sessionTTL; past it the oldest is ended, at about 80 bytes a
// session. maxSessionsPerToken bounds one token's, so that a tenant logging
// in again and again ends only its own oldest sessions, never another's.
const (
	maxSessions         = 10000
	maxSessionsPerToken = 100
)

// sessions are the logged-in sessions by nonce.
type sessions struct {
	mu   sync.Mutex
	byID map[[16]byte]held
}

// held is a logged-in session: its issue instant, and the SHA-256 of the
// token it logged in with (never the token), whose role and scope are read
// again on every request, so that a revoked token's sessions end with it.
type held struct {
	issued time.Time
	hash   [sha256.Size]byte
}

func (ss *sessions) live(nonce [16]byte, now time.Time) (held, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	h, ok := ss.byID[nonce]
	return h, ok && now.Sub(h.issued) <= sessionTTL
}

// add holds a logged-in session, ending expired ones, and the token's
// oldest when it holds maxSessionsPerToken, or else the oldest of all when
// maxSessions are held.
func (ss *sessions) add(nonce [16]byte, h held) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var oldest, oldestOwn [16]byte
	all, own := 0, 0
	for id, o := range ss.byID {
		if h.issued.Sub(o.issued) > sessionTTL {
			delete(ss.byID, id)
			continue
		}
		if all == 0 || o.issued.Before(ss.byID[oldest].issued) {
			oldest = id
		}
		all++
		if o.hash == h.hash {
			if own == 0 || o.issued.Before(ss.byID[oldestOwn].issued) {
				oldestOwn = id
			}
			own++
		}
	}
	switch {
	case own >= maxSessionsPerToken:
		delete(ss.byID, oldestOwn)
	case all >= maxSessions:
		delete(ss.byID, oldest)
	}
	ss.byID[nonce] = h
}

func (ss *sessions) end(nonce [16]byte) {
	ss.mu.Lock()
	delete(ss.byID, nonce)
	ss.mu.Unlock()
}

// newSession makes a fresh session (a new nonce: logging in never keeps the
// nonce of the anonymous session, so a planted cookie gains nothing) and
// sets its cookie.
func (p *Page) newSession(w http.ResponseWriter, r *http.Request, authed bool, hash [sha256.Size]byte) session {
	s := session{issued: p.now(), authed: authed, hash: hash}
	rand.Read(s.nonce[:])
	b := append(binary.BigEndian.AppendUint64(s.nonce[:], uint64(s.issued.Unix())), 0)
	if authed {
		b[24] = 1
		p.sessions.add(s.nonce, held{s.issued, hash})
	}
	p.setCookie(w, r, base64.RawURLEncoding.EncodeToString(b)+"."+base64.RawURLEncoding.EncodeToString(p.mac("session", b)), int(sessionTTL/time.Second))
	return s
}

// setCookie sets the session cookie (package doc, "Security").
func (p *Page) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	secure := r.TLS != nil || p.behindProxy && r.Header.Get("X-Forwarded-Proto") == "https"
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
}

// authed lets a request through with a logged-in session whose token is
// still valid, carrying the token (operator.WithToken), if the token may
// do need (an operator.Access entry); with any session when the page has
// no token (one is made on the first visit), as an admin. Without one a GET
// or HEAD (a read: an uptime check's HEAD is answered as the GET) is sent
// to the login form and anything else refused with 403.
func (p *Page) authed(need string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := p.readSession(r)
		var tok store.Token
		switch {
		case ok && p.token == "":
			tok = openToken
		case ok && s.authed:
			var err error
			if tok, err = p.auth.ByHash(r.Context(), s.hash); errors.Is(err, operator.ErrBadToken) {
				p.sessions.end(s.nonce) // revoked since
				ok = false
			} else if err != nil {
				p.failErr(w, r, err)
				return
			}
		default:
			ok = false
		}
		if ok {
			r = withSession(r.WithContext(operator.WithToken(r.Context(), tok)), s)
			if err := operator.Allowed(tok, need); err != nil {
				if r.URL.Path == Prefix && read(r) && operator.Allowed(tok, needRegistrations) == nil {
					http.Redirect(w, r, Prefix+"registrations", http.StatusSeeOther) // a tenant's first view
					return
				}
				p.failErr(w, r, err)
				return
			}
			next(w, r)
			return
		}
		if p.token == "" {
			s := p.newSession(w, r, false, [sha256.Size]byte{})
			r = withSession(r.WithContext(operator.WithToken(r.Context(), openToken)), s)
			if !read(r) {
				// A POST needs the CSRF token of a session it had before.
				p.fail(w, r, http.StatusForbidden, "This action came without a session: reload the page and try again.")
				return
			}
			next(w, r)
			return
		}
		if read(r) {
			http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
			return
		}
		p.fail(w, r, http.StatusForbidden, "Log in with a token first.")
	}
}

// openToken is who visits a page open without a token (loopback only).
var openToken = store.Token{ID: "open", Name: "an open page (no HERALD_ADMIN_TOKEN)", Role: store.RoleAdmin}

// The operator.Access entries of the page.
const (
	needOverview      = "page: overview, hosts"
	needRegistrations = "page: registrations, registration, record"
	needActions       = "page: unpark, pause, resume, resend, skip, rewind, rotate-secret, set-rate"
	needResetHost     = "page: reset-host"
	needTokens        = "page: tokens (list, create, revoke)"
	needKeys          = "page: keys (list)"
	needEditKeys      = "page: keys (add, rotate, remove)"
)

func (p *Page) routes() map[string]http.HandlerFunc {
	pre := strings.TrimSuffix(Prefix, "/")
	return map[string]http.HandlerFunc{
		"GET " + pre + "/{$}":           p.authed(needOverview, p.overview),
		"GET " + pre + "/registrations": p.authed(needRegistrations, p.registrations),
		"GET " + pre + "/registration":  p.authed(needRegistrations, p.registration),
		"GET " + pre + "/hosts":         p.authed(needOverview, p.hosts),
		"GET " + pre + "/record":        p.authed(needRegistrations, p.record),
		"GET " + pre + "/tokens":        p.authed(needTokens, p.tokens),
		"GET " + pre + "/keys":          p.authed(needKeys, p.keys),
		"POST " + pre + "/tokens":       p.authed(needTokens, p.csrf(p.createToken)),
		"POST " + pre + "/keys":         p.authed(needEditKeys, p.csrf(p.putKey("add-key", operator.AddKey))),
		"POST " + pre + "/key/rotate":   p.authed(needEditKeys, p.csrf(p.putKey("rotate-key", operator.RotateKey))),
		"POST " + pre + "/key/remove":   p.authed(needEditKeys, p.csrf(p.removeKey)),
		"GET " + pre + "/confirm":       p.authed(needRegistrations, p.confirm), // and the action's own need
		"POST " + pre + "/action":       p.authed(needRegistrations, p.csrf(p.action)),
		"GET " + pre + "/login":         p.loginForm,
		"POST " + pre + "/login":        p.csrf(p.login),
		"POST " + pre + "/logout":       p.authed(needRegistrations, p.csrf(p.logout)),
	}
}

// scoped is the store as the request's token sees it (operator.Scoped).
func (p *Page) scoped(r *http.Request) store.Backend {
	return operator.Scoped(p.store, operator.TokenOf(r.Context()))
}

// read reports whether r only reads: GET, or HEAD, which the mux serves
// with the GET's handler.
func read(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// crossOrigin refuses a browser's request from another origin, by its
// Sec-Fetch-Site or else its Origin header, as the daemon's APIs do.
var crossOrigin = http.NewCrossOriginProtection()

// csrf refuses, with 403, a POST whose form lacks the session's CSRF token
// or that comes from another origin.
func (p *Page) csrf(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := sessionOf(r)
		if !ok {
			if s, ok = p.readSession(r); ok {
				r = withSession(r, s)
			}
		}
		if crossOrigin.Check(r) != nil {
			p.fail(w, r, http.StatusForbidden, "This action came from another site and was refused.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if !ok || r.ParseForm() != nil ||
			subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(p.csrfToken(s))) != 1 {
			p.fail(w, r, http.StatusForbidden, "This action's form token (CSRF) is missing or stale: nothing was changed. Go back, reload the page and try again.")
			return
		}
		next(w, r)
	}
}

func (p *Page) loginForm(w http.ResponseWriter, r *http.Request) {
	if p.token == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	s, ok := p.readSession(r)
	if !ok {
		s = p.newSession(w, r, false, [sha256.Size]byte{})
	}
	p.render(w, withSession(r, s), http.StatusOK, "login", map[string]any{"Title": "Log in"})
}

func (p *Page) login(w http.ResponseWriter, r *http.Request) {
	if p.token == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	client := throttle.Client(r, p.behindProxy)
	if wait := p.throttle.Wait(client, "the page's login"); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		p.render(w, r, http.StatusTooManyRequests, "login", map[string]any{"Title": "Log in",
			"Error": fmt.Sprintf("Too many failed logins from this address: try again in %v.", wait)})
		return
	}
	typed := sha256.Sum256([]byte(r.PostForm.Get("token"))) // hashed first, so that not even the length leaks
	tok, err := p.auth.Authenticate(r.Context(), r.PostForm.Get("token"))
	if errors.Is(err, operator.ErrBadToken) {
		p.throttle.Failed(client, "the page's login")
		p.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in",
			"Error": "That is not the admin token (HERALD_ADMIN_TOKEN), nor a token made by herald tokens create and not revoked."})
		return
	} else if err != nil {
		p.log.Error("herald page: cannot check a token", "err", err) // it names the database: not for a visitor
		p.fail(w, r, http.StatusServiceUnavailable, "The token cannot be checked now: the store does not answer (the daemon's log says why).")
		return
	}
	if err := operator.Allowed(tok, needRegistrations); err != nil {
		p.render(w, r, http.StatusForbidden, "login", map[string]any{"Title": "Log in",
			"Error": "This token (" + tok.ID + ") is a " + string(tok.Role) + "'s: the page needs a reader's, an operator's or an admin's."})
		return
	}
	p.newSession(w, r, true, typed)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (p *Page) logout(w http.ResponseWriter, r *http.Request) {
	if s, ok := sessionOf(r); ok {
		p.sessions.end(s.nonce)
	}
	p.setCookie(w, r, "", -1)
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

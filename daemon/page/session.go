package page

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sessions are stateless: the cookie carries a random nonce, its issue
// instant and whether it logged in, signed with the Page's key (HMAC-SHA256).
// The CSRF token of a session is another HMAC of its nonce, so it is bound
// to the session and needs no storage. A restart makes a new key: everyone
// logs in again.

const cookieName = "herald_session"

type session struct {
	nonce  [16]byte
	issued time.Time
	authed bool
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
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	body, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return session{}, false
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
	return s, true
}

// newSession makes a fresh session (a new nonce: logging in never keeps the
// nonce of the anonymous session, so a planted cookie gains nothing) and
// sets its cookie.
func (p *Page) newSession(w http.ResponseWriter, r *http.Request, authed bool) session {
	s := session{issued: p.now(), authed: authed}
	rand.Read(s.nonce[:])
	b := binary.BigEndian.AppendUint64(s.nonce[:], uint64(s.issued.Unix()))
	if authed {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	setCookie(w, r, base64.RawURLEncoding.EncodeToString(b)+"."+base64.RawURLEncoding.EncodeToString(p.mac("session", b)), int(sessionTTL/time.Second))
	return s
}

// setCookie sets the session cookie: HttpOnly, SameSite=Strict, scoped to
// the page's path, Secure when served over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// authed lets a request through with a logged-in session (any session when
// the page has no token: one is made on the first visit). Without one a GET
// or HEAD (a read: an uptime check's HEAD is answered as the GET) is sent
// to the login form and anything else refused with 403.
func (p *Page) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := p.readSession(r)
		if ok && (s.authed || p.token == "") {
			next(w, withSession(r, s))
			return
		}
		if p.token == "" {
			s := p.newSession(w, r, false)
			if !read(r) {
				// A POST needs the CSRF token of a session it had before.
				p.fail(w, withSession(r, s), http.StatusForbidden, "This action came without a session: reload the page and try again.")
				return
			}
			next(w, withSession(r, s))
			return
		}
		if read(r) {
			http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
			return
		}
		p.fail(w, r, http.StatusForbidden, "Log in with the admin token first.")
	}
}

// read reports whether r only reads: GET, or HEAD, which the mux serves
// with the GET's handler.
func read(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

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
		if o := r.Header.Get("Origin"); o != "" && o != "null" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				p.fail(w, r, http.StatusForbidden, "This action came from another site and was refused.")
				return
			}
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

// tokenOK compares a typed token with the admin token in constant time
// (hashed first, so that not even the length leaks).
func (p *Page) tokenOK(typed string) bool {
	a, b := sha256.Sum256([]byte(typed)), sha256.Sum256([]byte(p.token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func (p *Page) loginForm(w http.ResponseWriter, r *http.Request) {
	if p.token == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	s, ok := p.readSession(r)
	if !ok {
		s = p.newSession(w, r, false)
	}
	p.render(w, withSession(r, s), http.StatusOK, "login", map[string]any{"Title": "Log in"})
}

func (p *Page) login(w http.ResponseWriter, r *http.Request) {
	if p.token == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	if !p.tokenOK(r.PostForm.Get("token")) {
		p.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in",
			"Error": "That is not the admin token (HERALD_ADMIN_TOKEN)."})
		return
	}
	p.newSession(w, r, true)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (p *Page) logout(w http.ResponseWriter, r *http.Request) {
	setCookie(w, r, "", -1)
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

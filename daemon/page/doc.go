// Package page is herald's operator page: HTML rendered by the daemon, on
// the admin address under /ui/, that shows the plane at a glance and acts
// on it (README, "The operator's page", shows the views). Each action asks
// for confirmation, or is a form of its own, and calls the same
// internal/operator function as the CLI and the API, which writes the same
// evidence. The charts are inline SVG of RunSampler's samples.
//
// # Security
//
// With Options.Token set, a login form takes the admin token (compared in
// constant time) or a stored one (store.TokenStore), whose role and scope
// limit what the session sees and does (operator.Access, operator.Scoped;
// checked again at each request, so that revoking it ends the session),
// and sets a session cookie: HttpOnly, SameSite=Strict,
// scoped to the page's path, Secure over TLS, signed with a key made with
// the Page (a restart logs everyone out), valid 12 hours or until logout,
// which ends it on the server. Failed logins are throttled per client
// (Options.Throttle). Without a token
// the page is open, as the admin API is on loopback, and answers only
// requests whose Host is a loopback name (DNS rebinding). Every POST needs
// the session's CSRF token (an HMAC of the session) and no foreign Origin,
// or is refused with 403 and changes nothing. No secret is rendered: not
// the token, not a registration's config, not a URL's credentials
// (operator.RedactURL). Every value is escaped by html/template, shows a
// character that does not print as itself as its code point (‹U+202E›) and
// is a bidirectional isolate, so that no value can hide or reorder the text
// around it. The Content-Security-Policy allows no script; frames are
// refused; no Referer leaves the page (Referrer-Policy same-origin, under
// which the page's own POSTs carry their Origin, an opaque one is refused).
package page

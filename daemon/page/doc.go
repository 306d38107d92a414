// Package page is herald's operator page: server-rendered HTML, served by
// herald run on the admin address under /ui/, that shows the plane at a
// glance and acts on it safely.
//
// # Views
//
//   - Overview (/ui/): per namespace, registrations by state (ready,
//     retrying, held by host, parked, idle), records behind, deliveries/s
//     and records behind over the last hour, hosts down or unavailable, the
//     oldest parked registration and the largest lags.
//   - Registrations (/ui/registrations?stream=&namespace=&state=): cursor,
//     head, lag, attempts, next attempt and the last error, whole.
//   - A registration (/ui/registration?stream=&id=): its cursor against its
//     stream's head, its evidence, and the actions unpark, skip to seq (with
//     a reason) and rewind to seq.
//   - Hosts (/ui/hosts), with reset; record status (/ui/record?id= or
//     ?stream=&seq=): which registrations have acknowledged a record.
//
// Every action has a confirmation step (a page that says what will happen)
// and then calls the same Store method as the CLI's command (herald unpark,
// skip, rewind, hosts reset), which writes the same evidence.
//
// # Charts
//
// The charts are inline SVG drawn from samples that the Page keeps in
// memory: RunSampler takes one a minute (Sample: Store.Stats, and the
// deliveries counted by the workers' Hooks). They start empty when the
// daemon starts and keep the last hour.
//
// # Security
//
// With Options.Token set, a login form takes the admin token (compared in
// constant time) and sets a session cookie: HttpOnly, SameSite=Strict,
// scoped to the page's path, Secure over TLS, signed with a key made when
// the Page is (a restart logs everyone out), valid 12 hours. Without a
// token the page is open, as the admin API is on loopback, and answers only
// requests whose Host is a loopback address or localhost (a defence against
// DNS rebinding). Every POST needs the session's CSRF token (an HMAC of the
// session) in its form and no foreign Origin, or it is refused with 403 and
// changes nothing. No secret is rendered: not the token, not registration
// configs, not a URL's query or long path segments (RedactURL). Every value
// is escaped by html/template (stream names and receivers' error bodies are
// attacker-controlled); a character in the page's text that does not print
// as itself (a control character, a bidirectional override, a zero-width
// space or joiner, so also the joiner inside an emoji sequence) is shown as
// its code point, ‹U+202E›, and each value is a bidirectional isolate
// (bdi, unicode-bidi: isolate), so that no value can hide the text around
// it, nor a right-to-left name reorder its neighbours. Attribute values
// (the forms' hidden fields, the filters' inputs) keep their bytes.
// The Content-Security-Policy allows no script at all: the page needs none.
// Frames are refused, no Referer is sent.
package page

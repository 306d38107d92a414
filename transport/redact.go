package transport

import (
	"cmp"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

const (
	redacted = "[redacted]" // what replaces a secret in reasons, evidence bodies and locations
	// minSecret is the shortest string treated as a possible secret: shorter
	// fragments ("true", "json") would turn evidence into noise, and protect
	// nothing as credentials.
	minSecret = 8
)

// safeHeaders carry no secrets and are common words in answers. The
// Herald- ones are a record's kind, stream and seq (projection/webhook),
// which a receiver's refusal often names.
var safeHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "User-Agent": true,
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true,
	"Herald-Kind": true, "Herald-Stream": true, "Herald-Seq": true,
}

// redactor removes what an attempt sent that may be secret (package doc,
// "Secrets"; long path segments are capability URLs' tokens) from what the
// receiver answered and from error words: whole, in parts (the token of
// "Bearer <token>") and as an echo encodes it (JSON, also with "\/" as PHP
// writes it, percent-encoding, HTML).
type redactor []string // longest first

func newRedactor(u *url.URL, h http.Header) redactor {
	var s []string
	add := func(v string) {
		if len(v) < minSecret {
			return
		}
		s = append(s, v, url.QueryEscape(v), url.PathEscape(v), html.EscapeString(v))
		if j, err := json.Marshal(v); err == nil {
			js := string(j[1 : len(j)-1])
			s = append(s, js, strings.ReplaceAll(js, "/", `\/`))
		}
	}
	for name, values := range h {
		if safeHeaders[http.CanonicalHeaderKey(name)] {
			continue
		}
		for _, v := range values {
			add(v)
			for _, f := range strings.FieldsFunc(v, func(r rune) bool {
				return r == ' ' || r == ',' || r == ';' || r == '=' || r == '"' || r == '\t'
			}) {
				add(f)
			}
		}
	}
	if u != nil {
		add(u.RawQuery)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
			if len(seg) >= 16 {
				add(seg)
				if un, err := url.PathUnescape(seg); err == nil {
					add(un)
				}
			}
		}
		if u.User != nil {
			add(u.User.String())
		}
	}
	slices.SortFunc(s, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(s)
}

func (r redactor) String(s string) string {
	for _, secret := range r {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

package page

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// visible returns html, as html/template rendered it, with every character
// of its text that does not print as itself shown as its code point in
// guillemets, ‹U+202E›: control characters other than tab, line feed and
// carriage return (a terminal's escape sequences), format characters (the
// bidirectional overrides and isolates U+202A–U+202E and U+2066–U+2069,
// which would reorder the text after them; zero-width characters, which
// make two names look the same), private-use and unassigned code points.
//
// Stored values are hostile: a receiver writes its error body, a producer
// names its stream. html/template's escaping stops them from making
// markup; this stops them from rearranging or hiding the text around them.
// Only text between tags is changed. Attribute values (the hidden stream
// and id of an action's form, a link's query) keep their exact bytes, so
// an action still names the registration it was shown for. html/template
// escapes '<' and '>' in every value it writes, so each '<' of its output
// opens one of the templates' own tags, and the first '>' after it closes
// that tag.
func visible(html string) string {
	if strings.IndexFunc(html, hidden) < 0 {
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
		case !inTag && hidden(r):
			fmt.Fprintf(&b, "‹U+%04X›", r)
			continue
		}
		// The bytes as they were: a byte that is not UTF-8 stays one.
		_, n := utf8.DecodeRuneInString(html[i:])
		b.WriteString(html[i : i+n])
	}
	return b.String()
}

// hidden reports whether r does not print as itself: not a letter, mark,
// number, punctuation, symbol or space character (unicode.IsGraphic), and
// not a tab or line break, which the page's text keeps (a body is shown in
// a <pre>).
func hidden(r rune) bool {
	return !unicode.IsGraphic(r) && r != '\t' && r != '\n' && r != '\r'
}

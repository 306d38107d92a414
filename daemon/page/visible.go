package page

import (
	"strings"
	"unicode/utf8"

	"github.com/heraldpush/herald/internal/table"
)

// visible returns html, as html/template rendered it, with every Hidden
// character of its text (internal/table: control characters other than
// tab and line breaks, format characters such as the bidirectional
// overrides, private-use and unassigned code points) shown as its code
// point, ‹U+202E›, as the CLI's tables show it.
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

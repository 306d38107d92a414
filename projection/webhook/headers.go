package webhook

// herald's headers on every webhook, in canonical form (package doc,
// "Headers"). They are not signed: Standard Webhooks signs the id, the
// timestamp and the body.
const (
	HeaderKind   = "Herald-Kind"   // the record's kind, encoded by HeaderValue
	HeaderStream = "Herald-Stream" // the record's stream, encoded by HeaderValue
	HeaderSeq    = "Herald-Seq"    // the record's seq, decimal
)

// HeaderValue is s as HeaderKind and HeaderStream carry it: printable ASCII
// (U+0021 to U+007E) as is, but for '"' and '%'; every other byte of s as
// %XX, upper-case hex, as the CloudEvents HTTP Protocol Binding 1.0.2
// (§3.1.3.2, "HTTP Header Values") encodes its headers. Whatever s holds
// (spaces, CR, LF, any UTF-8, bytes that are not UTF-8), the value is
// printable ASCII without spaces, at most 3×len(s) bytes, and a
// percent-decoder that leaves '+' alone (Go's url.PathUnescape,
// JavaScript's decodeURIComponent, Python's urllib.parse.unquote) gives s
// back. A name of printable ASCII without '"' or '%' is sent verbatim.
func HeaderValue(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if escaped(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; escaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// escaped reports whether HeaderValue encodes the byte c.
func escaped(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }

package page

import (
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldpush/herald/internal/table"
)

// FuzzVisible: whatever a value holds, the page's text shows no character
// that does not print as itself, and its tags (attribute values included)
// keep the bytes html/template wrote.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"orders/1", "see \u202Eexe.txt\u202C", "\x1b[2J\a", "a\u200Bb", "<b>&\"'>", "tab\tnew\nline", "\xff", "\x80\u202e"} {
		f.Add(s)
	}
	tmpl := template.Must(template.New("t").Parse(`<p title="{{.}}">{{.}}</p><pre>{{.}}</pre><input value="{{.}}">`))
	tag := regexp.MustCompile(`<[^>]*>`)
	f.Fuzz(func(t *testing.T, v string) {
		var b strings.Builder
		if err := tmpl.Execute(&b, v); err != nil {
			t.Fatalf("html/template refused %q: %v", v, err) // a string is always rendered
		}
		in := b.String()
		out := visible(in)
		if text := tag.ReplaceAllString(out, " "); strings.IndexFunc(text, table.Hidden) >= 0 {
			t.Fatalf("visible(%q) = %q: its text holds a character that does not print", in, out)
		}
		if got, want := tag.FindAllString(out, -1), tag.FindAllString(in, -1); strings.Join(got, "") != strings.Join(want, "") {
			t.Fatalf("visible(%q) changed its tags: %q, want %q", in, got, want)
		}
	})
}

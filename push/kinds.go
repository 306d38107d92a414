package push

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldpush/herald/journal"
)

// MaxKinds bounds a registration's kind patterns: a subscription lists the
// events it wants, not a catalogue.
const MaxKinds = 64

// Wants reports whether the registration wants records of kind: always when
// Kinds is empty; otherwise when a pattern matches. A pattern is an exact
// kind ("invoice.paid"), or ends in "*" and matches every kind that begins
// with what precedes it ("order.*" matches "order.created" and
// "order.line.added", not "order"; "*" matches all). A record it does not
// want is passed as one a projection yields no message for: the cursor moves
// past it and nothing is sent.
func (r Registration) Wants(kind string) bool {
	if len(r.Kinds) == 0 {
		return true
	}
	for _, p := range r.Kinds {
		if prefix, wild := strings.CutSuffix(p, "*"); wild && strings.HasPrefix(kind, prefix) || !wild && p == kind {
			return true
		}
	}
	return false
}

// ValidateKinds checks kind patterns (see Registration.Wants): at most
// MaxKinds, each a valid kind (non-empty, at most journal.MaxKindBytes bytes,
// UTF-8, no whitespace or control character) with at most one "*", at its
// end, and no pattern twice. Errors wrap ErrInvalid and name the field
// "kinds".
func ValidateKinds(kinds []string) error {
	if len(kinds) > MaxKinds {
		return journal.Invalid("kinds", "has %d patterns, more than %d", len(kinds), MaxKinds)
	}
	seen := make(map[string]bool, len(kinds))
	for i, k := range kinds {
		switch {
		case k == "":
			return journal.Invalid("kinds", "pattern %d is empty", i+1)
		case len(k) > journal.MaxKindBytes:
			return journal.Invalid("kinds", "pattern %d is longer than %d bytes (%d)", i+1, journal.MaxKindBytes, len(k))
		case !utf8.ValidString(k):
			return journal.Invalid("kinds", "pattern %d is not valid UTF-8", i+1)
		case strings.Contains(strings.TrimSuffix(k, "*"), "*"):
			return journal.Invalid("kinds", "pattern %q may have one \"*\", at its end (order.*)", k)
		case seen[k]:
			return journal.Invalid("kinds", "pattern %q is given twice", k)
		}
		for j, r := range k {
			if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' {
				return journal.Invalid("kinds", "pattern %q has whitespace or a control character %U at byte %d", k, r, j)
			}
		}
		seen[k] = true
	}
	return nil
}

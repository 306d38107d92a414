package cli

import (
	"errors"
	"testing"

	"github.com/heraldpush/herald/journal"
)

// FuzzParseLine: a line of an `append --file` never panics the parser, and
// what it accepts either validates as an entry or is refused with a clear
// ErrInvalid, never anything else.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt-1","kind":"order.created","payload":{"total":42}}`,
		`{"id":"b","kind":"blob","content_type":"image/png","payload_base64":"iVBORw0KGgo="}`,
		`{"id":"t","kind":"note","content_type":"text/plain","payload":"hello"}`,
		`{"id":"x","kind":"k","payload":{},"final":true,"stream":"order/1002"}`,
		`{"id":"x","kind":"k","payload":1,"payload_base64":"AA=="}`,
		`{"id":"x","kind":"k","unknown":1}`,
		`{"id":"\u0000","kind":"k k","payload":[`,
		`[]`, `null`, `"str"`, ``,
	} {
		f.Add([]byte(seed), "s")
	}
	f.Fuzz(func(t *testing.T, raw []byte, stream string) {
		e, s, err := parseLine(raw, stream)
		if err != nil {
			return
		}
		if _, err := journal.ValidateEntries(s, []journal.Entry{e}, 0); err != nil && !errors.Is(err, journal.ErrInvalid) {
			t.Fatalf("validation failed without ErrInvalid: %v", err)
		}
	})
}

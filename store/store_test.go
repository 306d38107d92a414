package store

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
)

// A skip goes forward, to at most one past the head; a caught-up cursor has
// nothing to skip, and says so rather than offer a range of one seq.
func TestValidateSkip(t *testing.T) {
	for _, c := range []struct {
		next, head, to uint64
		says           string // "" when valid
	}{
		{1, 5, 2, ""},
		{1, 5, 6, ""},
		{3, 5, 3, "from #3 to at most #6"},
		{3, 5, 7, "from #3 to at most #6"},
		{6, 5, 6, "the cursor (#6) is past the head (#5), nothing to skip"},
		{6, 5, 7, "nothing to skip"},
	} {
		err := ValidateSkip(c.next, c.head, c.to)
		if c.says == "" {
			if err != nil {
				t.Errorf("ValidateSkip(%d, %d, %d) = %v", c.next, c.head, c.to, err)
			}
			continue
		}
		if !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ValidateSkip(%d, %d, %d) = %v, want an invalid %q", c.next, c.head, c.to, err, c.says)
		}
	}
}

// The hosts a claim leaves out are exactly those the cap gives no room.
func TestHostsAtCapAreThoseWithoutRoom(t *testing.T) {
	q := DueQuery{MaxPerHost: 4, Busy: map[string]int{"c.example:443": 4, "a.example:443": 5, "b.example:443": 3, "d.example:443": 0}}
	if got := HostsAtCap(q); !slices.Equal(got, []string{"a.example:443", "c.example:443"}) {
		t.Fatalf("HostsAtCap = %q, want a and c (at or above 4), sorted", got)
	}
	q.MaxPerHost = 0
	if got := HostsAtCap(q); len(got) != 0 {
		t.Fatalf("HostsAtCap without a cap = %q, want none", got)
	}
}

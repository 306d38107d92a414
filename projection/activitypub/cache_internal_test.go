package activitypub

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func note(to string) []byte {
	return fmt.Appendf(nil, `{"type":"Create","to":[%q],"bto":["https://secret.example/u"],"object":{"type":"Note"}}`, to)
}

// The parsed payloads kept are bounded in number and in size, and a
// payload is only ever answered with its own parse: the key is its bytes.
func TestActivitiesAreBoundedAndKeyedByTheirBytes(t *testing.T) {
	c := newActivities(2, 200)
	for i := range 5 {
		payload := note(fmt.Sprintf("https://a.example/users/%d", i))
		a, err := c.get(payload)
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprintf("https://a.example/users/%d", i)}, a.activity.ids("to"), "its own activity")
		require.NotContains(t, string(a.body), "bto", "its own stripped body")
		require.LessOrEqual(t, len(c.Items), 2, "the bound")
		require.Len(t, c.Order, len(c.Items))
	}
	require.Contains(t, c.Items, string(note("https://a.example/users/4")))
	require.NotContains(t, c.Items, string(note("https://a.example/users/0")), "the oldest went first")

	// The same bytes in a reused buffer: the cached body is not the caller's.
	buf := note("https://a.example/users/4")
	a, err := c.get(buf)
	require.NoError(t, err)
	copy(buf, strings.Repeat("x", len(buf)))
	require.Contains(t, string(a.body), "users/4")

	big := fmt.Appendf(nil, `{"type":"Create","content":%q}`, strings.Repeat("n", 300))
	_, err = c.get(big)
	require.NoError(t, err)
	require.NotContains(t, c.Items, string(big), "a payload above the size bound is not kept")

	_, err = c.get([]byte(`{"to":"x"}`))
	require.Error(t, err, "no type")
	require.NotContains(t, c.Items, `{"to":"x"}`, "errors are not kept")
}

// A payload without bto or bcc is sent as it is, from the cache's copy.
func TestCachedBodyOfAnUnstrippedPayloadIsACopy(t *testing.T) {
	c := newActivities(4, 1<<10)
	buf := []byte(`{"type":"Create","to":["https://www.w3.org/ns/activitystreams#Public"]}`)
	want := string(buf)
	a, err := c.get(buf)
	require.NoError(t, err)
	copy(buf, strings.Repeat("x", len(buf)))
	require.Equal(t, want, string(a.body))
}

// Inboxes of one audience are served at once: concurrent gets of a few
// payloads each answer their own and keep the bound (run with -race).
func TestActivitiesConcurrently(t *testing.T) {
	c := newActivities(3, 1<<10)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				to := fmt.Sprintf("https://a.example/users/%d", (i+j)%5)
				a, err := c.get(note(to))
				if err != nil || !slices.Equal(a.activity.ids("to"), []string{to}) {
					t.Errorf("get(%s) = %v, %v", to, a, err)
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, len(c.Items), 3)
}

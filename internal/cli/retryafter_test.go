package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
)

func TestFmtDelay(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 2 * time.Minute: "2m", time.Hour: "1h",
		90 * time.Minute: "1h30m", 30 * 24 * time.Hour: "30d", 25 * time.Hour: "25h", 1500 * time.Millisecond: "1.5s",
	} {
		require.Equal(t, want, fmtDelay(d), d.String())
	}
}

// The evidence's Retry-After note says what herald waits, and what the
// receiver asked when that differs; other errors are kept whole.
func TestRetryAfterNote(t *testing.T) {
	at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		err   string
		waits time.Duration
		want  string
	}{
		{"503 Service Unavailable; Retry-After 720h0m0s", time.Hour, "503 Service Unavailable; retry after 1h (capped; the receiver asked 30d)"},
		{"429 Too Many Requests; Retry-After 2m0s", 2 * time.Minute, "429 Too Many Requests; retry after 2m (as the receiver asked)"},
		{"503 Service Unavailable; Retry-After 0s", time.Second, "503 Service Unavailable; retry after 1s (at least 1s; the receiver asked 0s)"},
		{"500 Internal Server Error", time.Minute, "500 Internal Server Error"},
		{"body says ; Retry-After soon", time.Minute, "body says ; Retry-After soon"},
	} {
		ev := push.Evidence{At: at, NotBefore: at.Add(c.waits), Error: c.err}
		require.Equal(t, c.want, retryAfterNote(ev), c.err)
	}
	require.Equal(t, "x; Retry-After 1h0m0s", retryAfterNote(push.Evidence{At: at, Error: "x; Retry-After 1h0m0s"}), "no next attempt: kept")
}

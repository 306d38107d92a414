package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/store"
	"github.com/stretchr/testify/require"
)

func TestFormatDaysWritesWholeDaysAndDropsZeroParts(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 2 * time.Minute: "2m", time.Hour: "1h",
		90 * time.Minute: "1h30m", 30 * 24 * time.Hour: "30d", 25 * time.Hour: "25h", 1500 * time.Millisecond: "1.5s",
	} {
		require.Equal(t, want, store.FormatDays(d), d.String())
	}
}

// TestScheduleReadsFormatDaysJoined: a schedule shown as its delays'
// FormatDays, comma-joined (the operator's --retry-schedule hint), reads back.
func TestScheduleReadsFormatDaysJoined(t *testing.T) {
	in := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 10 * time.Hour, 3 * 24 * time.Hour}
	shown := make([]string, len(in))
	for i, d := range in {
		shown[i] = store.FormatDays(d)
	}
	out, err := store.ParseSchedule("retry_schedule", strings.Join(shown, ","))
	require.NoError(t, err)
	require.Equal(t, in, out)
}

// TestParseDaysNamesTheRangeNotTheSyntax: a span that reads but lies
// outside the field's range (too long, negative, too short) is refused
// naming the range; only one that does not read is called malformed.
func TestParseDaysNamesTheRangeNotTheSyntax(t *testing.T) {
	for in, want := range map[string]string{
		"99999d":       `invalid retain_max: "99999d" is out of range: it must be 1h to 3650d`,
		"99999999999d": `invalid retain_max: "99999999999d" is out of range: it must be 1h to 3650d`,
		"-1d":          `invalid retain_max: "-1d" is out of range: it must be 1h to 3650d`,
		"-1h":          `invalid retain_max: "-1h" is out of range: it must be 1h to 3650d`,
		"0h":           `invalid retain_max: "0h" is out of range: it must be 1h to 3650d`,
		"9999999999h":  `invalid retain_max: "9999999999h" is out of range: it must be 1h to 3650d`,
		"3651d":        `invalid retain_max: "3651d" is out of range: it must be 1h to 3650d`,
		"1.5d":         `invalid retain_max: "1.5d" is not a duration (5s, 30m, 2h) or whole days (3d)`,
		"1d1h":         `invalid retain_max: "1d1h" is not a duration (5s, 30m, 2h) or whole days (3d)`,
		"soon":         `invalid retain_max: "soon" is not a duration (5s, 30m, 2h) or whole days (3d)`,
		"-soon":        `invalid retain_max: "-soon" is not a duration (5s, 30m, 2h) or whole days (3d)`,
		"":             `invalid retain_max: "" is not a duration (5s, 30m, 2h) or whole days (3d)`,
	} {
		_, err := store.ParseDays("retain_max", in, store.MinRetainMax, store.MaxRetainMax)
		require.EqualError(t, err, want, in)
	}
	for in, want := range map[string]time.Duration{"1h": time.Hour, "3650d": store.MaxRetainMax, "36h": 36 * time.Hour} {
		d, err := store.ParseDays("retain_max", in, store.MinRetainMax, store.MaxRetainMax)
		require.NoError(t, err, in)
		require.Equal(t, want, d, in)
	}
}

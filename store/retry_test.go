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

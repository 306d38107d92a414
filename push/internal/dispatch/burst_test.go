package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// minBurstSpacing is push.MinBurstSpacing, which push's rate tests pin
// through the bursts they see.
const minBurstSpacing = 250 * time.Millisecond

// TestBurstOfSplitsARateIntoEvenBurstsAQuarterSecondApartOrMore: every
// rate's bursts fill its count exactly (size × bursts = N), span at least
// its period, and are minBurstSpacing apart or more, as many as that allows
// of equal size.
func TestBurstOfSplitsARateIntoEvenBurstsAQuarterSecondApartOrMore(t *testing.T) {
	for _, c := range []struct {
		rate    store.Rate
		size    int
		spacing time.Duration
	}{
		{store.Rate{Count: 10, Per: time.Second}, 5, 500 * time.Millisecond},
		{store.Rate{Count: 20, Per: time.Second}, 5, 250 * time.Millisecond},
		{store.Rate{Count: 2, Per: time.Second}, 1, 500 * time.Millisecond},
		{store.Rate{Count: 7, Per: time.Second}, 7, time.Second},
		{store.Rate{Count: 1, Per: time.Second}, 1, time.Second},
		{store.Rate{Count: 3, Per: time.Second}, 1, 333333334 * time.Nanosecond},
		{store.Rate{Count: 600, Per: time.Minute}, 3, 300 * time.Millisecond},
		{store.Rate{Count: 10000, Per: time.Second}, 2500, 250 * time.Millisecond},
		{store.Rate{Count: 5, Per: time.Hour}, 1, 12 * time.Minute},
	} {
		b := burstOf(c.rate, minBurstSpacing)
		require.Equal(t, burst{size: c.size, spacing: c.spacing}, b, c.rate.String())
	}
	for _, per := range []time.Duration{time.Second, time.Minute, time.Hour} {
		for n := 1; n <= store.MaxRateCount; n++ {
			b := burstOf(store.Rate{Count: n, Per: per}, minBurstSpacing)
			m := n / b.size
			require.Equal(t, n, m*b.size, "%d per %v: bursts fill the count", n, per)
			require.GreaterOrEqual(t, time.Duration(m)*b.spacing, per, "%d per %v: m bursts span the period", n, per)
			require.GreaterOrEqual(t, b.spacing, minBurstSpacing, "%d per %v", n, per)
		}
	}
}

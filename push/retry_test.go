package push_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// registerWith registers stream/id with retry policy p.
func (f *fixture) registerWith(stream, id string, p push.RetryPolicy) {
	f.t.Helper()
	f.registered(push.Registration{Stream: stream, ID: id, URL: "https://receiver.example/hooks/" + id, Retry: p})
}

// TestRetryScheduleDelaysAreExact: a registration's schedule spaces its
// attempts by exactly its delays, repeats the last, and its MaxAttempts parks.
func TestRetryScheduleDelaysAreExact(t *testing.T) {
	f := newFixture(t)
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome { return unavailable() }
	f.append("s", 1)
	f.registerWith("s", "r", push.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 5 * time.Minute, 2 * time.Hour}, MaxAttempts: 5})
	w := f.worker(push.WithSchedule(push.Schedule{time.Hour}), push.WithMaxAttempts(100)) // the registration's own wins
	when := t0
	for i, d := range []time.Duration{5 * time.Second, 5 * time.Minute, 2 * time.Hour, 2 * time.Hour} {
		f.sweep(w, when)
		st := f.get("s", "r")
		require.Equal(t, i+1, st.Attempts)
		require.Equal(t, when.Add(d), st.NextAttemptAt, "failure %d waits %v", i+1, d)
		require.Zero(t, f.sweep(w, when.Add(d-time.Nanosecond)).Registrations, "not due before its delay")
		when = when.Add(d)
	}
	f.sweep(w, when)
	st := f.get("s", "r")
	require.True(t, st.Parked, "the fifth failure parks (MaxAttempts 5)")
	require.Contains(t, st.LastError, "attempt 5 of 5")
	require.Len(t, f.recv.sent(), 5)
}

// TestRetryForParksAtTheFirstAttemptPastIt: a time ceiling counts from the
// run's first failure and parks the first failure at or past it, never one
// before; a success in between starts the count again.
func TestRetryForParksAtTheFirstAttemptPastIt(t *testing.T) {
	f := newFixture(t)
	fail := true // record 1 fails while fail, record 2 always
	f.recv.answer = func(_ push.Registration, m push.Message, _ int) push.Outcome {
		if m.ID == "s#1" && !fail {
			return accepted()
		}
		return unavailable()
	}
	f.append("s", 2)
	f.registerWith("s", "r", push.RetryPolicy{Schedule: []time.Duration{50 * time.Minute}, For: 2 * time.Hour})
	w := f.worker()
	mins := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	for _, m := range []int{0, 50, 100} {
		f.sweep(w, mins(m))
		require.False(t, f.get("s", "r").Parked, "a failure %d min into a 2h run does not park", m)
	}
	require.Equal(t, t0, f.get("s", "r").FailingSince.UTC())
	fail = false
	f.sweep(w, mins(150)) // #1 accepted; #2 fails: a new run starts here
	st := f.get("s", "r")
	require.Equal(t, uint64(2), st.NextSeq)
	require.Equal(t, mins(150), st.FailingSince.UTC(), "the run restarts at the moved cursor")
	for _, m := range []int{200, 250} {
		f.sweep(w, mins(m))
		require.False(t, f.get("s", "r").Parked, "%d min: 1h40 into the new run at most", m)
	}
	f.sweep(w, mins(300)) // 2h30 into the run: the first attempt past 2h
	st = f.get("s", "r")
	require.True(t, st.Parked)
	require.Contains(t, st.LastError, "retry ceiling (2h0m0s) reached")
	require.Equal(t, 4, st.Attempts, "150, 200, 250 and 300 min")
	require.Equal(t, store.EventParked, f.evidence("s", "r")[0].Event)
}

// retrying is a projection that states its namespace's retry defaults.
type retrying struct {
	projection
	policy push.RetryPolicy
}

func (p retrying) DefaultRetry() push.RetryPolicy { return p.policy }

// TestRetryDefaultsLayer: a registration's own policy, else the worker's
// options, else the namespace's default, else DefaultRetry; the delays and
// the ceiling default apart.
func TestRetryDefaultsLayer(t *testing.T) {
	f := newFixture(t)
	ns := push.RetryPolicy{Schedule: []time.Duration{time.Minute}, For: 72 * time.Hour}
	mk := func(opts ...push.Option) *push.Worker {
		w := f.build(f.store, f.store, f.recv, retrying{policy: ns}, append([]push.Option{push.WithOwner("w")}, opts...)...)
		return w
	}
	require.Equal(t, ns, mk().Retry(), "the namespace's")
	require.Equal(t, push.RetryPolicy{Schedule: ns.Schedule, MaxAttempts: 7}, mk(push.WithMaxAttempts(7)).Retry(), "the worker's ceiling replaces the namespace's whole ceiling")
	require.Equal(t, push.RetryPolicy{Schedule: []time.Duration{time.Second}, For: ns.For}, mk(push.WithSchedule(push.Schedule{time.Second})).Retry())
	require.Equal(t, push.DefaultRetry, f.worker().Retry(), "a namespace without defaults: Backoff and DefaultMaxAttempts")
	own := push.RetryPolicy{MaxAttempts: 3}
	require.Equal(t, push.RetryPolicy{Schedule: ns.Schedule, MaxAttempts: 3}, own.Or(mk().Retry()), "the registration's ceiling, the namespace's delays")
}

// TestRetryAfterBeatsTheSchedule: a receiver's Retry-After replaces the
// schedule's delay, still capped at MaxRetryAfter.
func TestRetryAfterBeatsTheSchedule(t *testing.T) {
	f := newFixture(t)
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		o := unavailable()
		o.HasRetryAfter, o.RetryAfter = true, 3*time.Hour
		return o
	}
	f.append("s", 1)
	f.registerWith("s", "r", push.RetryPolicy{Schedule: []time.Duration{5 * time.Second}})
	f.sweep(f.worker(push.WithMaxRetryAfter(time.Hour)), t0)
	require.Equal(t, t0.Add(time.Hour), f.get("s", "r").NextAttemptAt)
}

func TestRetryPolicyValidate(t *testing.T) {
	for _, c := range []struct {
		p     push.RetryPolicy
		field string
	}{
		{push.RetryPolicy{Schedule: []time.Duration{time.Second, 500 * time.Millisecond}}, "retry_schedule"},
		{push.RetryPolicy{Schedule: make([]time.Duration, store.MaxScheduleSteps+1)}, "retry_schedule"},
		{push.RetryPolicy{Schedule: []time.Duration{8 * 24 * time.Hour}}, "retry_schedule"},
		{push.RetryPolicy{MaxAttempts: -1}, "max_attempts"},
		{push.RetryPolicy{For: 30 * time.Second}, "retry_for"},
	} {
		require.ErrorContains(t, c.p.Validate(), c.field)
	}
	require.NoError(t, push.RetryPolicy{Schedule: []time.Duration{5 * time.Second, 10 * time.Hour}, MaxAttempts: 8, For: 72 * time.Hour}.Validate())
	d, err := store.ParseSchedule("retry_schedule", "5s,5m,30m,2h,5h,10h,10h")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}, d)
	_, err = store.ParseSchedule("retry-schedule", "5s,,1h")
	require.ErrorContains(t, err, "retry-schedule")
	days, err := store.ParseDays("retry-for", "3d", store.MinRetryFor, store.MaxRetryFor)
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, days)
	_, err = store.ParseDays("retry-for", "3 days", store.MinRetryFor, store.MaxRetryFor)
	require.ErrorContains(t, err, "retry-for")
}

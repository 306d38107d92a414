package push_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// registerRate registers stream/id with rate r (and window w, 0 for 1).
func (f *fixture) registerRate(stream, id string, r store.Rate, w int) {
	f.t.Helper()
	f.registered(push.Registration{Stream: stream, ID: id, URL: "https://receiver.example/hooks/" + id, Rate: r, Window: w})
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// TestRateSendsBurstsAtExactInstants: under RunOnce the rate is
// deterministic: a burst at each instant the pace allows, nothing between,
// whatever the backlog. 2/s is one record each half second; 10/s five.
func TestRateSendsBurstsAtExactInstants(t *testing.T) {
	type step struct {
		at   int   // ms after t0
		seqs []int // the records delivered at it
	}
	cases := []struct {
		rate  store.Rate
		steps []step
	}{
		{store.Rate{Count: 2, Per: time.Second}, []step{{0, []int{1}}, {250, nil}, {499, nil}, {500, []int{2}}, {1000, []int{3}},
			{1400, nil}, {1500, []int{4}}, {2000, []int{5}}, {2500, []int{6}}, {3000, []int{7}}, {3500, []int{8}}, {4000, []int{9}},
			{4500, []int{10}}, {5000, nil}}},
		{store.Rate{Count: 10, Per: time.Second}, []step{{0, []int{1, 2, 3, 4, 5}}, {250, nil}, {500, []int{6, 7, 8, 9, 10}}, {1000, nil}}},
		{store.Rate{Count: 120, Per: time.Minute}, []step{{0, []int{1}}, {499, nil}, {500, []int{2}}, {999, nil}, {1000, []int{3}}}},
	}
	for _, c := range cases {
		t.Run(c.rate.String(), func(t *testing.T) {
			f := newFixture(t)
			f.append("s", 10)
			f.registerRate("s", "r", c.rate, 0)
			w := f.worker()
			for _, s := range c.steps {
				before := len(f.recv.sent())
				rep := f.sweep(w, ms(s.at))
				var got []int
				for _, d := range f.recv.sent()[before:] {
					var n int
					_, err := fmt.Sscanf(d.MsgID, "s#%d", &n)
					require.NoError(t, err)
					got = append(got, n)
				}
				require.Equal(t, s.seqs, got, "at +%dms", s.at)
				require.Equal(t, len(s.seqs), rep.Records, "at +%dms", s.at)
				require.Zero(t, rep.Retries+rep.Parked+rep.Backlog, "at +%dms: a rate is no failure, nor a backlog to sweep at once", s.at)
			}
			st := f.get("s", "r")
			require.Equal(t, uint64(len(f.recv.sent())+1), st.NextSeq)
			require.Zero(t, st.Attempts)
			require.Empty(t, f.evidence("s", "r"), "no deferral leaves evidence")
		})
	}
}

// TestRateDeferralIsNoFailure: a claim the rate holds sends nothing and
// charges nothing (no attempt toward a ceiling of 1, no evidence, no host
// failure); the sweep reports it Paced, and the registration is due at the
// pace. An operator's unpark, or a retry, never makes it early.
func TestRateDeferralIsNoFailure(t *testing.T) {
	f := newFixture(t)
	f.append("s", 5)
	f.registerRate("s", "r", store.Rate{Count: 1, Per: time.Second}, 0)
	w := f.worker(push.WithMaxAttempts(1))
	rep := f.sweep(w, ms(0))
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 1, Deliveries: 1, Paced: 1}, rep)
	st := f.get("s", "r")
	require.Equal(t, ms(1000), st.PacedUntil)
	require.Equal(t, ms(1000), st.NextAttemptAt, "due again at the next burst")

	require.NoError(t, f.store.Rewind(t.Context(), "s", "r", 1, ms(10))) // due at once
	rep = f.sweep(w, ms(20))
	require.Equal(t, push.SweepReport{Registrations: 1, Paced: 1}, rep, "claimed, held by the rate")
	st = f.get("s", "r")
	require.Zero(t, st.Attempts)
	require.Equal(t, ms(1000), st.NextAttemptAt, "due at the pace again")
	require.Len(t, f.evidence("s", "r"), 1, "the rewind's, no more")
	hosts, err := f.store.Hosts(t.Context(), store.HostQuery{})
	require.NoError(t, err)
	require.Empty(t, hosts, "nothing charged to the host")
	require.Len(t, f.recv.sent(), 1)

	// A failed request is a request: its retry waits for the pace too.
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		o := unavailable()
		o.HasRetryAfter, o.RetryAfter = true, time.Second // clamped to 1 s: before the pace
		return o
	}
	w = f.worker(push.WithMaxAttempts(10))
	rep = f.sweep(w, ms(1000))
	require.Equal(t, 1, rep.Retries)
	st = f.get("s", "r")
	require.Equal(t, ms(2000), st.NextAttemptAt, "Retry-After's 1s and the rate's 1s")
	f.recv.answer = nil
	rep = f.sweep(w, ms(2000))
	require.Equal(t, 1, rep.Records)
	require.Equal(t, []string{"s#1", "s#1", "s#1"}, f.recv.ids("s/r"), "#1 before the rewind, then its failure and its retry, each a burst")
}

// TestRateAfterALapsedLeaseWaitsASpacing: a claim that takes a lapsed lease
// counts the burst the lost turn may have sent, which no write recorded, as
// ended at the claim: it sends nothing until a spacing after it.
func TestRateAfterALapsedLeaseWaitsASpacing(t *testing.T) {
	f := newFixture(t)
	f.append("s", 3)
	f.registerRate("s", "r", store.Rate{Count: 4, Per: time.Second}, 0) // bursts of 1, 250 ms apart
	lost, err := f.store.Due(t.Context(), store.DueQuery{At: ms(0), Limit: 1, Namespace: ns, Owner: "killed", LeaseUntil: ms(6000)})
	require.NoError(t, err)
	require.Len(t, lost.Registrations, 1) // a worker that died after sending, before any write
	w := f.worker()
	require.Zero(t, f.sweep(w, ms(5999)).Registrations, "leased")
	rep := f.sweep(w, ms(6000))
	require.Equal(t, push.SweepReport{Registrations: 1, Paced: 1}, rep, "the lapsed lease's burst counts")
	require.Equal(t, ms(6250), f.get("s", "r").NextAttemptAt)
	require.Zero(t, f.sweep(w, ms(6249)).Registrations)
	require.Equal(t, 1, f.sweep(w, ms(6250)).Records)
	require.Equal(t, 1, f.sweep(w, ms(6500)).Records, "a released lease: no wait beyond the pace")
}

// TestRateCountsMessagesAndParksARecordThatNeverFits: a burst counts
// requests, not records; a record of more messages than a burst can never
// be sent under the rate, and parks saying so; records of kinds not wanted
// cost nothing.
func TestRateCountsMessagesAndParksARecordThatNeverFits(t *testing.T) {
	f := newFixture(t)
	f.proj.messages = func(rec journal.Record, _ push.Registration) ([]push.Message, error) {
		var n int
		_, _ = fmt.Sscanf(string(rec.Payload), `{"n":%d}`, &n)
		out := make([]push.Message, 0, 3)
		for i := range map[int]int{1: 2, 2: 3, 3: 3, 4: 6}[n] {
			out = append(out, push.Message{ID: fmt.Sprintf("%s.%d", rec.ID, i), Body: rec.Payload})
		}
		return out, nil
	}
	f.append("s", 4)
	f.registerRate("s", "r", store.Rate{Count: 10, Per: time.Second}, 0) // bursts of 5
	w := f.worker()
	rep := f.sweep(w, ms(0))
	require.Equal(t, 2, rep.Records, "#1 (2 messages) and #2 (3): 5")
	rep = f.sweep(w, ms(500))
	require.Equal(t, 1, rep.Records, "#3 (3 messages), then #4's 6 fit in no burst")
	require.Equal(t, 1, rep.Parked)
	st := f.get("s", "r")
	require.True(t, st.Parked)
	require.Equal(t, uint64(4), st.NextSeq)
	require.Contains(t, st.LastError, "record #4 has 6 messages, more than the burst of 5 that rate 10/s sends at once")
	require.Len(t, f.recv.sent(), 8)
}

// TestRateWithAWindowSendsABurstConcurrently: a window sends a burst's
// messages at once, and never more than the burst.
func TestRateWithAWindowSendsABurstConcurrently(t *testing.T) {
	f := newFixture(t)
	f.append("s", 12)
	f.registerRate("s", "r", store.Rate{Count: 20, Per: time.Second}, 16) // bursts of 5, 250 ms apart
	w := f.worker(push.WithMaxPerHost(16))
	for i, want := range []int{5, 5, 2} {
		require.Equal(t, want, f.sweep(w, ms(250*i)).Records, "burst %d", i+1)
	}
	require.Equal(t, uint64(13), f.get("s", "r").NextSeq)
}

// TestRunClaimsAtTheRatesNextBurst: Run, whose interval is an hour, serves a
// 20/s registration's backlog burst by burst at the rate's pace (the turn
// that spent a burst tells the loop when the next may start), each burst a
// spacing after the previous one's last answer.
func TestRunClaimsAtTheRatesNextBurst(t *testing.T) {
	f := newFixture(t)
	delivered := make(chan time.Time, 15)
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		delivered <- time.Now()
		return accepted(), nil
	})
	f.append("s", 15)
	f.registerRate("s", "r", store.Rate{Count: 20, Per: time.Second}, 0) // bursts of 5, 250 ms apart
	w := f.workerOn(transport, push.WithOwner("w"))
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx, time.Hour) }()
	var got []time.Time
	deadline := time.After(time.Minute)
	for len(got) < 15 {
		select {
		case d := <-delivered:
			got = append(got, d)
		case <-deadline:
			t.Fatalf("%d of 15 delivered in a minute: the loop did not claim at the rate's next burst", len(got))
		}
	}
	cancel()
	require.NoError(t, <-stopped)
	for _, i := range []int{5, 10} {
		require.GreaterOrEqual(t, got[i].Sub(got[i-1]), 250*time.Millisecond, "burst %d starts a spacing after the last answer of the one before", i/5+1)
	}
}

// TestRateCountsOnlyTheRecordsItSends: records of kinds a registration does
// not want cost its rate nothing; a burst reads past them to its size.
func TestRateCountsOnlyTheRecordsItSends(t *testing.T) {
	f := newFixture(t)
	es := make([]journal.Entry, 600)
	for i := range es {
		kind := "other"
		if (i+1)%100 == 0 {
			kind = "wanted" // #100, #200, … #600
		}
		es[i] = journal.Entry{ID: fmt.Sprintf("s#%d", i+1), Kind: kind, Payload: []byte(`{}`)}
	}
	_, err := f.store.Append(t.Context(), "s", es...)
	require.NoError(t, err)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://receiver.example/r",
		Rate: store.Rate{Count: 10, Per: time.Second}, Kinds: []string{"wanted"}})
	w := f.worker()
	rep := f.sweep(w, ms(0))
	require.Equal(t, 5, rep.Deliveries)
	next := f.get("s", "r").NextSeq
	require.True(t, next > 500 && next <= 600, "the burst of 5 passed the records of other kinds to #500 and on (cursor %d)", next)
	rep = f.sweep(w, ms(500))
	require.Equal(t, 1, rep.Deliveries)
	require.Equal(t, uint64(601), f.get("s", "r").NextSeq)
	require.Equal(t, []string{"s#100", "s#200", "s#300", "s#400", "s#500", "s#600"}, f.recv.ids("s/r"))
}

// TestRateStoppingKeepsALapsedClaimUnreleased: a stopping Run gives back the
// claims it never started, but one that took a lapsed lease carries the
// lost turn's burst, which no write recorded; released, the next claim
// would find the lease released, not lapsed, and send a burst at once, on
// top of it. It is left to lapse, so the next claim still waits a spacing.
func TestRateStoppingKeepsALapsedClaimUnreleased(t *testing.T) {
	f := newFixture(t)
	f.append("a", 1)
	f.append("b", 1)
	f.register("a", "a")
	f.registerRate("b", "b", store.Rate{Count: 1, Per: time.Hour}, 0)
	now := time.Now()
	for _, c := range []struct {
		stream string
		at     time.Time
	}{{"a", now.Add(-3 * time.Hour)}, {"b", now.Add(-2 * time.Hour)}} { // a first in claim order
		lost, err := f.store.Due(t.Context(), store.DueQuery{At: c.at, Limit: 1, Namespace: ns, Owner: "killed", LeaseUntil: c.at.Add(time.Minute)})
		require.NoError(t, err)
		require.Len(t, lost.Registrations, 1)
		require.Equal(t, c.stream, lost.Registrations[0].Stream) // a worker that died mid-burst
	}
	arrived, unblock := make(chan struct{}), make(chan struct{})
	var bSent atomic.Int32
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if reg.Stream == "a" {
			close(arrived)
			<-unblock
		} else {
			bSent.Add(1)
		}
		return accepted(), nil
	})
	w := f.workerOn(transport, push.WithOwner("w"), push.WithMaxInFlight(1))
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx, time.Hour) }()
	<-arrived // a holds the one slot; b waits, claimed
	cancel()
	close(unblock)
	require.NoError(t, <-stopped)
	require.Zero(t, bSent.Load(), "b never started")

	rep, err := w.RunOnce(t.Context(), time.Now(), 10)
	require.NoError(t, err)
	require.Zero(t, bSent.Load(), "b's next burst waits for the lost one's: %+v", rep)
}

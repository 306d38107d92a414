package push_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

func TestSaturatedAndUnserved(t *testing.T) {
	f := newFixture(t)
	f.append("s", 1)
	for i := range 3 {
		f.register("s", fmt.Sprintf("r%d", i))
	}
	_, err := f.store.Register(t.Context(), push.Registration{Stream: "s", ID: "ce", Namespace: "cloudevents", URL: "https://ce.example/"})
	require.NoError(t, err)
	w := f.worker()
	rep, err := w.RunOnce(t.Context(), at(0), 2)
	require.NoError(t, err)
	require.Equal(t, push.SweepReport{Registrations: 2, Records: 2, Deliveries: 2, Unserved: 1, Saturated: true}, rep)
	require.True(t, rep.NeedsAttention())
	rep, err = w.RunOnce(t.Context(), at(1), 2)
	require.NoError(t, err)
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 1, Deliveries: 1, Unserved: 1}, rep)
	require.False(t, rep.NeedsAttention())
}

func TestRetryCeiling(t *testing.T) {
	for _, maxAttempts := range []int{1, 3} {
		t.Run(fmt.Sprintf("MaxAttempts%d", maxAttempts), func(t *testing.T) {
			f := newFixture(t)
			f.recv.answer = func(push.Registration, push.Message, int) push.Outcome { return unavailable() }
			f.append("s", 2)
			f.register("s", "r")
			w := f.worker(push.WithMaxAttempts(maxAttempts))
			when := at(0)
			for attempt := 1; attempt < maxAttempts; attempt++ {
				rep := f.sweep(w, when)
				require.Equal(t, 1, rep.Retries, "attempt %d retries", attempt)
				st := f.get("s", "r")
				require.Equal(t, attempt, st.Attempts)
				when = st.NextAttemptAt
			}
			rep := f.sweep(w, when)
			require.Equal(t, 1, rep.Parked, "the failure that makes attempts equal MaxAttempts parks")
			st := f.get("s", "r")
			require.True(t, st.Parked)
			require.Equal(t, maxAttempts, st.Attempts)
			require.Equal(t, uint64(1), st.NextSeq)
			require.Len(t, f.recv.sent(), maxAttempts, "MaxAttempts %d means %d tries", maxAttempts, maxAttempts)
			ev := f.evidence("s", "r")[0]
			require.Equal(t, store.EventParked, ev.Event)
			require.Equal(t, maxAttempts, ev.Attempt)
			require.Contains(t, ev.Error, "retry ceiling reached")
		})
	}
}

func TestRetryAfterIsHonouredAndClamped(t *testing.T) {
	cases := []struct {
		name  string
		given time.Duration
		want  time.Duration
	}{
		{"as given", 90 * time.Second, 90 * time.Second},
		{"zero waits a second", 0, time.Second},
		{"a date in the past waits a second", -time.Hour, time.Second},
		{"sub-second rounds up to the floor", 10 * time.Millisecond, time.Second},
		{"a year is capped at MaxRetryAfter", 365 * 24 * time.Hour, 10 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
				return push.Outcome{Verdict: push.Transient, Status: 429, RetryAfter: c.given, HasRetryAfter: true}
			}
			f.append("s", 1)
			f.register("s", "r")
			f.sweep(f.worker(push.WithMaxRetryAfter(10*time.Minute)), at(0))
			st := f.get("s", "r")
			require.Equal(t, at(0).Add(c.want), st.NextAttemptAt)
			require.Equal(t, at(0).Add(c.want), f.evidence("s", "r")[0].NotBefore)
		})
	}
}

func TestScheduleReplacesBackoff(t *testing.T) {
	f := newFixture(t)
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome { return unavailable() }
	f.append("s", 1)
	f.register("s", "r")
	w := f.worker(push.WithSchedule(push.Schedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute}))
	when := at(0)
	var waits []time.Duration
	for range 4 {
		f.sweep(w, when)
		next := f.get("s", "r").NextAttemptAt
		waits = append(waits, next.Sub(when))
		when = next
	}
	require.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 30 * time.Minute}, waits)
}

func TestProjectionErrorIsTransient(t *testing.T) {
	f := newFixture(t)
	f.proj.messages = func(rec journal.Record, _ push.Registration) ([]push.Message, error) {
		if rec.Seq == 2 {
			return nil, errors.New("payload is not an activity")
		}
		return []push.Message{{ID: rec.ID}}, nil
	}
	f.append("s", 3)
	f.register("s", "r")
	w := f.worker(push.WithMaxAttempts(2))
	rep := f.sweep(w, at(0))
	require.Equal(t, 1, rep.Retries)
	st := f.get("s", "r")
	require.Equal(t, uint64(2), st.NextSeq)
	require.Equal(t, "projection: payload is not an activity", st.LastError)
	rep = f.sweep(w, st.NextAttemptAt)
	require.Equal(t, 1, rep.Parked, "the ceiling applies to this plane's faults too")
	require.Equal(t, []string{"s#1"}, f.recv.ids("s/r"))
}

func TestRejectedByPolicy(t *testing.T) {
	rejectSecond := func(_ push.Registration, msg push.Message, _ int) push.Outcome {
		if msg.ID == "s#2" {
			return push.Outcome{Verdict: push.Rejected, Status: 422, Reason: "422 Unprocessable Entity", Body: []byte(`{"error":"bad signature"}`)}
		}
		return accepted()
	}
	t.Run("retry by default", func(t *testing.T) {
		f := newFixture(t)
		f.recv.answer = rejectSecond
		f.append("s", 3)
		f.register("s", "r")
		rep := f.sweep(f.worker(), at(0))
		require.Equal(t, 1, rep.Retries)
		require.Equal(t, uint64(2), f.get("s", "r").NextSeq, "nothing is lost")
	})
	t.Run("skip by registration", func(t *testing.T) {
		f := newFixture(t)
		f.recv.answer = rejectSecond
		f.append("s", 3)
		f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://a.example/", OnRejected: push.RejectSkip})
		rep := f.sweep(f.worker(), at(0))
		require.Equal(t, push.SweepReport{Registrations: 1, Records: 3, Deliveries: 2, Skipped: 1}, rep)
		require.Equal(t, uint64(4), f.get("s", "r").NextSeq)
		ev := f.evidence("s", "r")
		require.Len(t, ev, 1)
		require.Equal(t, store.EventSkipped, ev[0].Event)
		require.Equal(t, 422, ev[0].Status)
		require.Equal(t, "s#2", ev[0].RecordID)
		require.Equal(t, `{"error":"bad signature"}`, ev[0].Body)
	})
}

// A store error ends only its own turn, is not blamed on the receiver, and
// is returned with the report of what the other turns did.
func TestStoreErrorEndsOnlyItsTurn(t *testing.T) {
	f := newFixture(t)
	f.append("good", 2)
	f.append("bad", 2)
	f.register("good", "r")
	f.register("bad", "r")
	fs := &failingStore{Store: f.store}
	w := f.build(&streamFailingJournal{Journal: f.store, fail: "bad"}, fs, f.recv, f.proj)
	rep, err := w.RunOnce(t.Context(), at(0), 10)
	require.ErrorIs(t, err, errInjected)
	require.ErrorContains(t, err, "stream=bad id=r")
	require.Equal(t, push.SweepReport{Registrations: 2, Records: 2, Deliveries: 2, Errors: 1}, rep)
	require.Equal(t, uint64(3), f.get("good", "r").NextSeq, "the other turn finished")
	bad := f.get("bad", "r")
	require.Zero(t, bad.Attempts, "no attempt is counted against the receiver")
	require.Equal(t, uint64(1), bad.NextSeq)
}

type streamFailingJournal struct {
	journal.Journal
	fail string
}

func (j *streamFailingJournal) Read(ctx context.Context, stream string, from uint64, limit, maxBytes int) ([]journal.Record, error) {
	if stream == j.fail {
		return nil, errInjected
	}
	return j.Journal.Read(ctx, stream, from, limit, maxBytes)
}

func TestTerminalRecordCompletes(t *testing.T) {
	f := newFixture(t)
	f.proj.terminal = func(rec journal.Record) bool { return rec.Seq == 2 } // e.g. TASK_STATE_COMPLETED
	f.append("task/1", 3)
	f.register("task/1", "push")
	rep := f.sweep(f.worker(), at(0))
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 2, Deliveries: 2, Completed: 1}, rep)
	require.Equal(t, seqIDs("task/1", 1, 2), f.recv.ids("task/1/push"), "nothing after the terminal record")
	_, err := f.store.Get(t.Context(), "task/1", "push")
	require.ErrorIs(t, err, journal.ErrNotFound)
}

func TestParkingLogsHostOnly(t *testing.T) {
	f := newFixture(t)
	f.recv.answer = func(push.Registration, push.Message, int) push.Outcome {
		return push.Outcome{Verdict: push.Permanent, Status: 410, Reason: "410 Gone"}
	}
	f.append("s", 1)
	f.register("s", "r")
	f.sweep(f.worker(), at(0))
	logs := f.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "host=receiver.example")
	require.Contains(t, logs, "410 Gone")
	require.NotContains(t, logs, "capability-in-url", "never the full URL")
	require.NotContains(t, logs, "/hooks/", "never the path")
	require.NotContains(t, logs, "whsec_s3cr3t", "never a secret")
	require.NotContains(t, fmt.Sprintf("%v %+v %#v", f.get("s", "r"), f.get("s", "r"), f.get("s", "r").Registration), "whsec_s3cr3t")
}

// When ctx ends mid-page, what was acknowledged is saved and the abandoned
// attempt is not counted.
func TestCancelSavesProgress(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.recv.answer = func(_ push.Registration, msg push.Message, _ int) push.Outcome {
		if msg.ID == "s#3" {
			cancel()
		}
		return accepted()
	}
	f.append("s", 6)
	f.register("s", "r")
	_, err := f.worker().RunOnce(ctx, at(0), 10)
	require.ErrorIs(t, err, context.Canceled)
	st := f.get("s", "r")
	require.Equal(t, uint64(4), st.NextSeq, "records 1 to 3 were acknowledged before the cancel")
	require.Zero(t, st.Attempts)
	require.Equal(t, seqIDs("s", 1, 3), f.recv.ids("s/r"), "no new record is started")
}

func TestMaxInFlightBoundsTheFanOut(t *testing.T) {
	f := newFixture(t)
	var inFlight, peak atomic.Int32
	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(reached) })
		}
		<-release
		return accepted(), nil
	})
	f.append("s", 1)
	for i := range 10 {
		f.register("s", fmt.Sprintf("r%d", i))
	}
	w := f.workerOn(transport, push.WithMaxInFlight(3), push.WithOwner("w"))
	done := make(chan push.SweepReport)
	errs := make(chan error, 1)
	go func() {
		rep, err := w.RunOnce(context.Background(), at(0), 10)
		errs <- err
		done <- rep
	}()
	<-reached
	close(release)
	require.NoError(t, <-errs)
	rep := <-done
	require.Equal(t, 10, rep.Deliveries)
	require.Equal(t, int32(3), peak.Load(), "three registrations at once, never more")
}

func TestRunSweepsOnWakeAndStops(t *testing.T) {
	f := newFixture(t)
	delivered := make(chan string, 10)
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		delivered <- msg.ID
		return accepted(), nil
	})
	f.register("s", "r")
	w := f.workerOn(transport, push.WithOwner("w"))
	d := runDaemon(t, w)

	f.append("s", 1)
	w.Wake()
	require.Equal(t, "s#1", <-delivered, "Wake sweeps at once, long before the hour")
	d.stop(t)
	require.ErrorIs(t, w.Run(t.Context(), 0), journal.ErrInvalid)
}

// A turn of Run that ran across a wake reads its stream once more before it
// releases its claim, and delivers what it finds under the same claim: a
// record appended while the turn was sending the one before it needs no
// claim of its own.
func TestRunTurnReadsAgainAfterAWake(t *testing.T) {
	f := newFixture(t)
	inside, release := make(chan struct{}), make(chan struct{})
	delivered := make(chan string, 10)
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if msg.ID == "s#1" {
			close(inside)
			<-release
		}
		delivered <- msg.ID
		return accepted(), nil
	})
	f.register("s", "r")
	f.append("s", 1)
	turns := make(chan push.SweepReport, 10)
	hooks := push.Hooks{Turn: func(_ time.Time, r push.SweepReport, _ time.Duration, _ error) { turns <- r }}
	w := f.workerOn(transport, push.WithOwner("w"), push.WithHooks(hooks))
	d := runDaemon(t, w)

	<-inside
	f.append("s", 1) // #2, while the turn sends #1 under its claim
	w.Wake()
	close(release)
	require.Equal(t, []string{"s#1", "s#2"}, []string{<-delivered, <-delivered})
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 2, Deliveries: 2}, <-turns,
		"the turn that sent #1 read again after the wake and sent #2 under the same claim")
	d.stop(t)
}

// Run claims on a turn's end only when the end may have left work: with no
// host at its cap, none troubled, no backlog and no wake, the first claim
// took everything due, and the two turns' ends make no claim of their own.
func TestRunTurnEndsClaimOnlyWhenTheyMayFindWork(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if reg.ID == "slow" {
			<-release
		}
		return accepted(), nil
	})
	f.register("s", "fast")
	f.register("t", "slow")
	f.append("s", 1)
	f.append("t", 1)
	var claims atomic.Int32
	ended := make(chan push.SweepReport, 4)
	hooks := push.Hooks{
		Claim: func(time.Time, int, error) { claims.Add(1) },
		Turn:  func(_ time.Time, r push.SweepReport, _ time.Duration, _ error) { ended <- r },
	}
	// refill is 1: before, every turn's end claimed.
	w := f.workerOn(transport, push.WithOwner("w"), push.WithHooks(hooks), push.WithMaxInFlight(4), push.WithMaxPerHost(8))
	d := runDaemon(t, w)

	require.Equal(t, 1, (<-ended).Deliveries, "the fast turn ended while the slow one runs")
	close(release)
	require.Equal(t, 1, (<-ended).Deliveries, "the slow turn ended")
	d.stop(t)
	require.Equal(t, int32(1), claims.Load(), "one claim took both; neither turn's end claimed")
	require.Equal(t, uint64(2), f.get("s", "fast").NextSeq)
	require.Equal(t, uint64(2), f.get("t", "slow").NextSeq)
}

func TestMessageNeverPrintsHeaders(t *testing.T) {
	m := push.Message{ID: "m1", ContentType: "application/json", Body: []byte(`{"secret":"b0dy"}`),
		Header: map[string][]string{"Authorization": {"Bearer t0ken"}}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		out := fmt.Sprintf(verb, m)
		require.NotContains(t, out, "t0ken", verb)
		require.NotContains(t, out, "b0dy", verb)
		require.Contains(t, out, "m1", verb)
	}
	require.NotContains(t, fmt.Sprintf("%+v", []push.Message{m}), "t0ken")
}

// A turn that gives its slot up at the end of a page, because another
// claim waits for the slot, reports Backlog, and Run claims again at once
// instead of waiting an interval per page.
func TestBacklogIsSweptAtOnce(t *testing.T) {
	f := newFixture(t)
	f.append("s", 5)
	f.register("s", "q")
	f.register("s", "r")
	w := f.worker(push.WithDrainPage(2), push.WithMaxInFlight(1))
	require.Equal(t, push.SweepReport{Registrations: 2, Records: 7, Deliveries: 7, Backlog: 1}, f.sweep(w, at(0)),
		"the first turn gave its slot to the second after a page; the second, with none waiting, served all 5")
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 3, Deliveries: 3}, f.sweep(w, at(1)), "at the head: no backlog")

	g := newFixture(t)
	delivered := make(chan sent, 20)
	transport := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		delivered <- sent{Reg: reg.ID, MsgID: msg.ID}
		return accepted(), nil
	})
	g.append("s", 5)
	g.register("s", "q")
	g.register("s", "r")
	turns := make(chan push.SweepReport, 20)
	hooks := push.Hooks{Turn: func(_ time.Time, r push.SweepReport, _ time.Duration, _ error) { turns <- r }}
	runner := g.workerOn(transport, push.WithOwner("w"), push.WithDrainPage(2), push.WithMaxInFlight(1), push.WithHooks(hooks))
	d := runDaemon(t, runner)
	got := map[string][]string{}
	for range 10 {
		s := <-delivered // three pages each, one slot, one interval of an hour: no waiting between pages
		got[s.Reg] = append(got[s.Reg], s.MsgID)
	}
	d.stop(t)
	require.Equal(t, map[string][]string{"q": seqIDs("s", 1, 5), "r": seqIDs("s", 1, 5)}, got)
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 2, Deliveries: 2, Backlog: 1}, <-turns,
		"Run claimed both; the first turn gave its one slot up after a page, to the claim waiting for it")
}

// RunOnce: a turn gives its slot up only to a claim that could take it.
// Host a's second registration waits for host a's cap, not for a slot: the
// turn on host b serves all its pages, while the turn on host a gives its
// place up to its host's waiting registration after a page.
func TestSweepTurnKeepsItsSlotFromAClaimItsHostCapHolds(t *testing.T) {
	f := newFixture(t)
	f.append("s", 5)
	for _, r := range []struct{ id, host string }{{"a1", "a.example"}, {"a2", "a.example"}, {"b1", "b.example"}} {
		f.registered(push.Registration{Stream: "s", ID: r.id, URL: "https://" + r.host + "/in"})
	}
	turns := make(chan push.SweepReport, 3)
	hooks := push.Hooks{Turn: func(_ time.Time, r push.SweepReport, _ time.Duration, _ error) { turns <- r }}
	w := f.worker(push.WithDrainPage(2), push.WithMaxInFlight(2), push.WithMaxPerHost(1), push.WithHooks(hooks))
	require.Equal(t, push.SweepReport{Registrations: 3, Records: 12, Deliveries: 12, Backlog: 1}, f.sweep(w, at(0)),
		"a1 gave its place to a2 after a page; b1 and a2 served all 5")
	close(turns)
	var got []push.SweepReport
	for r := range turns {
		got = append(got, r)
	}
	require.ElementsMatch(t, []push.SweepReport{
		{Registrations: 1, Records: 2, Deliveries: 2, Backlog: 1},
		{Registrations: 1, Records: 5, Deliveries: 5},
		{Registrations: 1, Records: 5, Deliveries: 5},
	}, got)
	require.ElementsMatch(t, []uint64{3, 6}, []uint64{f.get("s", "a1").NextSeq, f.get("s", "a2").NextSeq},
		"one of host a's registrations at its first page's end, the other past the stream's")
	require.EqualValues(t, 6, f.get("s", "b1").NextSeq)
}

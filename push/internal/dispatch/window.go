package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// pipe sends one turn's page through the registration's window (invariant
// 3). Only the turn's goroutine touches its state; each send holds a host
// token and reports on results, from a goroutine of its own when Window > 1.
type pipe struct {
	t       *turn
	base    uint64           // seq of recs[0]: the cursor when the turn began
	recs    []journal.Record // the page
	left    []int            // per record started: messages not yet acknowledged
	fails   map[int]failure  // per record: its first failed message
	results chan sent        // capacity Window: a send never waits to report

	lo       int            // first unacknowledged record (index in recs): the cursor
	hi       int            // next record to start
	msgs     []wire.Message // messages of the record being sent, recs[hi-1]
	sentMsgs int            // how many of msgs were sent
	inFlight int            // sends not yet reported
	stopped  bool           // no new sends: a failure, the budget, a stop or an error
	barrier  bool           // a terminal record was started (recs[hi-1]): nothing after it is sent
	terminal bool           // the cursor passed a terminal record
	err      error          // a store error or the worker stopping (no attempt counted)
}

type failure struct {
	msg int // the failed message's index in its record (-1: the projection failed)
	out wire.Outcome
	ev  store.Evidence
}

type sent struct {
	rec, msg int // indexes in the page and in the record
	id       string
	out      wire.Outcome
	err      error
}

func newPipe(t *turn, recs []journal.Record) *pipe {
	return &pipe{t: t, base: t.next, recs: recs, left: make([]int, len(recs)),
		fails: map[int]failure{}, results: make(chan sent, window(t.reg))}
}

// run sends until the page is acknowledged, or the pipe stopped and every
// send reported.
func (p *pipe) run(ctx context.Context) {
	for {
		p.fill(ctx)
		if p.inFlight == 0 {
			return // stopped, or nothing left that the window lets start
		}
		p.take(ctx, <-p.results)
	}
}

// fill starts sends while fewer than Window are in flight and the next
// record is within Window of the cursor.
func (p *pipe) fill(ctx context.Context) {
	t := p.t
	for p.advance(); !p.stopped && p.inFlight < window(t.reg); p.advance() {
		if p.sentMsgs == len(p.msgs) {
			if !p.canStart() || !p.start(ctx) {
				return
			}
			continue
		}
		select {
		case t.host.Tokens <- struct{}{}:
		case <-ctx.Done():
			p.stop(ctx.Err())
			return
		}
		rec, idx, msg := p.hi-1, p.sentMsgs, p.msgs[p.sentMsgs]
		p.sentMsgs++
		p.inFlight++
		if window(t.reg) == 1 {
			// The turn's goroutine sends it (results has room), sparing a goroutine.
			p.send(ctx, rec, idx, msg)
			continue
		}
		go p.send(ctx, rec, idx, msg)
	}
}

// send delivers one message and reports on results.
func (p *pipe) send(ctx context.Context, rec, idx int, msg wire.Message) {
	defer func() { <-p.t.host.Tokens }()
	out, err := p.t.deliver(ctx, msg)
	p.results <- sent{rec: rec, msg: idx, id: msg.ID, out: out, err: err}
}

// deliver sends one message of the turn, as every send does: through the
// transport under a delivery span, the slot's slow watch around it. The
// caller holds one of the host's tokens. err: the send did not end (the
// worker stopping).
func (t *turn) deliver(ctx context.Context, msg wire.Message) (wire.Outcome, error) {
	dctx, span := t.startDelivery(ctx)
	watch := t.slot.sending(t.w.cfg.SlowAfter)
	out, err := t.w.transport.Deliver(dctx, t.reg, msg, t.at)
	if watch.Stop() {
		t.slot.prompt.Store(true)
	}
	t.endDelivery(span, out, err)
	return out, err
}

// answered tells what the answer to message msgID of record seq said: the
// Attempt hook, and a troubled host that it answered.
func (t *turn) answered(ctx context.Context, seq uint64, msgID string, out wire.Outcome) {
	if h := t.w.cfg.Hooks.Attempt; h != nil {
		h(wire.Attempt{Registration: t.reg, Seq: seq, MessageID: msgID, At: t.at, Outcome: out})
	}
	t.hostAnswered(ctx, out)
}

// answerEvidence is the evidence of an answer to message msgID of rec.
func answerEvidence(rec journal.Record, msgID string, out wire.Outcome) store.Evidence {
	return store.Evidence{Seq: rec.Seq, RecordID: rec.ID, MessageID: msgID, Status: out.Status,
		Body: string(out.Body[:min(len(out.Body), store.MaxEvidenceBody)]), Location: out.Location, Duration: out.Duration, Error: out.Reason}
}

// canStart reports whether the window lets the next record start.
func (p *pipe) canStart() bool {
	return !p.stopped && !p.barrier && p.hi < len(p.recs) && p.hi < p.lo+window(p.t.reg)
}

// start projects the next record, or reports false: the pipe stopped.
func (p *pipe) start(ctx context.Context) bool {
	t, rec := p.t, p.recs[p.hi]
	if want := p.base + uint64(p.hi); rec.Seq != want {
		p.stop(fmt.Errorf("journal returned #%d where #%d was expected", rec.Seq, want))
		return false
	}
	if t.stopping() || t.late() || t.yields() {
		p.stopped = true
		return false
	}
	i := p.hi
	p.hi++
	p.msgs, p.sentMsgs = nil, 0
	if t.w.projection.Terminal(rec) {
		p.barrier = true // a registration ends at its terminal record
	}
	if !t.reg.Wants(rec.Kind) {
		return true // another kind: passed as a projection that yields no message
	}
	msgs, err := t.messages(ctx, rec)
	if err != nil {
		p.left[i] = 1 // never acknowledged
		if ctx.Err() != nil {
			p.stop(ctx.Err())
			return false
		}
		// This plane's fault, not the receiver's: transient, under the ceiling.
		ev := store.Evidence{Seq: rec.Seq, RecordID: rec.ID, Error: "projection: " + err.Error()}
		p.fails[i] = failure{msg: -1, out: wire.Outcome{Verdict: wire.Transient, Reason: ev.Error}, ev: ev}
		p.stopped = true
		return false
	}
	if ok, oversize := t.pace.take(len(msgs)); oversize {
		// The rate can never send it: given up as a permanent failure (parked).
		p.left[i] = 1
		ev := store.Evidence{Seq: rec.Seq, RecordID: rec.ID, Error: t.pace.oversize(rec.Seq, len(msgs), t.reg.Rate)}
		p.fails[i] = failure{msg: -1, out: wire.Outcome{Verdict: wire.Permanent, Reason: ev.Error}, ev: ev}
		p.stopped = true
		return false
	} else if !ok {
		// The burst is spent: the record waits for the next, unstarted.
		p.hi, p.barrier = i, false
		p.stopped = true
		return false
	}
	for j := range msgs {
		msgs[j] = withTrace(msgs[j], rec) // the record's trace, continued by a child span id
	}
	p.msgs, p.left[i] = msgs, len(msgs)
	return true
}

// messages projects rec for the turn's registration; a config its store
// could not open fails here, the registration's own failure.
func (t *turn) messages(ctx context.Context, rec journal.Record) ([]wire.Message, error) {
	if t.reg.ConfigError != "" {
		return nil, errors.New(t.reg.ConfigError)
	}
	return t.w.projection.Messages(ctx, rec, t.reg)
}

// advance moves the cursor past the acknowledged records at its head.
func (p *pipe) advance() {
	for p.lo < p.hi && p.left[p.lo] == 0 {
		p.t.rep.Records++
		p.lo++
		if p.barrier && p.lo == p.hi { // the terminal record, the last started
			p.terminal, p.stopped = true, true
			return
		}
	}
}

// take records what one send came back with.
func (p *pipe) take(ctx context.Context, s sent) {
	p.inFlight--
	t, w := p.t, p.t.w
	if s.err != nil {
		// The worker is stopping: keep what was acknowledged, count no attempt.
		p.stop(s.err)
		return
	}
	rec, out := p.recs[s.rec], s.out
	msgID := s.id
	t.answered(ctx, rec.Seq, msgID, out)
	if out.Verdict == wire.Accepted {
		t.rep.Deliveries++
		p.left[s.rec]--
		return // a success leaves no evidence
	}
	ev := answerEvidence(rec, msgID, out)
	switch {
	case out.Verdict == wire.Rejected && t.reg.OnRejected == store.RejectSkip:
		ev.Event, ev.At, ev.Stream, ev.Registration = store.EventSkipped, t.at, t.reg.Stream, t.reg.ID
		if err := w.store.AddEvidence(context.WithoutCancel(ctx), ev); err != nil {
			p.stop(fmt.Errorf("record skipped message %s: %w", msgID, err))
			return
		}
		t.rep.Skipped++
		p.left[s.rec]--
	default:
		if f, ok := p.fails[s.rec]; !ok || s.msg < f.msg {
			p.fails[s.rec] = failure{msg: s.msg, out: out, ev: ev}
		}
		p.stopped = true // those in flight end; the first unacknowledged record decides
	}
}

func (p *pipe) stop(err error) {
	p.stopped = true
	if p.err == nil {
		p.err = err
	}
}

// window is how many of r's deliveries may be in flight at once (Window 0 is 1).
func window(r store.Registration) int { return max(r.Window, 1) }

package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/heraldpush/herald/push/wire"
	"github.com/heraldpush/herald/store"
)

// resend sends a claimed resend (store.Resend) once, out of band, as push's
// doc, "Resends", says: as a turn sends, then its outcome as evidence
// (Store.Resent). A resend abandoned (the worker stopping, its lease ending)
// stays pending, and is sent once its lease lapsed.
func (t *turn) resend(ctx context.Context, rs store.Resend) error {
	if t.stopping() {
		return nil
	}
	ev := store.Evidence{At: t.at}
	failure, err := t.sendAgain(ctx, rs.Seq, &ev)
	switch {
	case errors.Is(err, errAbandoned) || err != nil && ctx.Err() != nil:
		t.w.cfg.Logger.Debug("herald: a resend was abandoned; it stays pending and is sent once its lease lapsed",
			"stream", t.reg.Stream, "registration", t.reg.ID, "seq", rs.Seq, "err", cmp.Or(context.Cause(ctx), err))
		return nil
	case err != nil:
		return err
	}
	ev.Error = store.ResentText(rs.By, failure)
	if err := t.w.store.Resent(context.WithoutCancel(ctx), rs.Claim(), ev); err != nil {
		return t.lost(err, fmt.Errorf("record the resend of #%d: %w", rs.Seq, err))
	}
	t.rep.Resends++
	t.w.cfg.Logger.Info("herald: record resent", "stream", t.reg.Stream, "registration", t.reg.ID, "host", t.hostName,
		"seq", rs.Seq, "by", rs.By, "status", ev.Status, "outcome", ev.Error)
	return nil
}

// errAbandoned: a resend's send did not end (the worker stopping).
var errAbandoned = errors.New("abandoned")

// sendAgain sends record seq's messages, filling ev, and returns why the
// resend failed ("" if every message was accepted). err is the journal's,
// or errAbandoned.
func (t *turn) sendAgain(ctx context.Context, seq uint64, ev *store.Evidence) (failure string, err error) {
	w := t.w
	// The journal itself, not the turns' shared pages: a resend's record is
	// behind the cursor, where no claim keeps it from being pruned.
	recs, err := w.records.Read(ctx, t.reg.Stream, seq, 1, w.cfg.PageBytes)
	if err != nil {
		return "", fmt.Errorf("read journal at #%d: %w", seq, err)
	}
	if len(recs) == 0 || recs[0].Seq != seq {
		return fmt.Sprintf("record #%d is no longer in the journal (pruned)", seq), nil
	}
	rec := recs[0]
	ev.Seq, ev.RecordID = rec.Seq, rec.ID
	if !t.reg.Wants(rec.Kind) {
		return fmt.Sprintf("the registration does not want kind %q: nothing to send", rec.Kind), nil
	}
	msgs, err := t.messages(ctx, rec)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", errAbandoned
	case err != nil:
		return "projection: " + err.Error(), nil
	}
	if len(msgs) == 0 {
		return "the projection made no message of it: nothing to send", nil
	}
	for _, msg := range msgs {
		msg = withTrace(msg, rec)
		select {
		case t.host.Tokens <- struct{}{}:
		case <-ctx.Done():
			return "", errAbandoned
		}
		out, err := t.deliver(ctx, msg)
		<-t.host.Tokens
		if err != nil {
			return "", errAbandoned
		}
		t.answered(ctx, rec.Seq, msg.ID, out)
		at := ev.At
		*ev = answerEvidence(rec, msg.ID, out) // its Error is the resend's (resend)
		ev.At = at
		if out.Verdict != wire.Accepted {
			return out.Reason, nil
		}
	}
	return "", nil
}

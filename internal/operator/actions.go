package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Register registers reg through s and returns it as stored (with its
// head) and as it was before: nil for a new one. check (a Worker's Check,
// which checks the config against its projection; nil: none) judges what is
// written. A webhook registration without secrets keeps those of the
// webhook registration it updates, or else gets a new one (MakeSecret),
// returned to be shown once. It is written through s.Update over what was
// read (Update), so that a change made meanwhile, a rotation whose secret
// was shown or a create whose secret was, is never undone. Errors are
// check's and s's; journal.ErrConflict when it changed under every read.
func Register(ctx context.Context, s store.Store, check func(store.Registration) error, reg store.Registration) (st store.Status, old *store.Status, secret string, err error) {
	err = retryConflicts(registration(reg.Stream, reg.ID), func() error {
		old, secret = nil, ""
		var was store.Registration // none: a create, refused if another made it meanwhile
		read, err := s.Get(ctx, reg.Stream, reg.ID)
		if err == nil {
			old, was = &read, read.Registration
		} else if !errors.Is(err, journal.ErrNotFound) {
			return err
		}
		r, made, _ := keepOrMakeSecret(reg, func() (store.Registration, error) {
			if old == nil {
				return store.Registration{}, journal.ErrNotFound
			}
			return was, nil
		})
		if check != nil {
			if err := check(r); err != nil {
				return err
			}
		}
		r, err = s.Update(ctx, r, was)
		if old != nil && errors.Is(err, journal.ErrNotFound) {
			return fmt.Errorf("%s was unregistered since it was read: %w", registration(reg.Stream, reg.ID), journal.ErrConflict) // read again: a create
		}
		if err == nil {
			secret = made
			st, err = s.Get(ctx, r.Stream, r.ID)
		}
		return err
	})
	if err != nil {
		return store.Status{}, nil, "", err
	}
	return st, old, secret, nil
}

// UnparkView answers an unpark: the registration after it, and whether it
// was parked (false: nothing changed, no evidence written).
type UnparkView struct {
	RegistrationView
	WasParked bool `json:"was_parked"`
}

// Unpark unparks stream/id at at (store.Store.Unpark). Errors are the
// store's: journal.ErrNotFound for no such registration.
func Unpark(ctx context.Context, s store.Store, stream, id string, at time.Time) (UnparkView, error) {
	before, err := s.Get(ctx, stream, id)
	if err != nil {
		return UnparkView{}, err
	}
	if err := s.Unpark(ctx, stream, id, at); err != nil {
		return UnparkView{}, err
	}
	after, err := s.Get(ctx, stream, id)
	if err != nil {
		return UnparkView{}, err
	}
	held, err := HeldHost(ctx, s, after.Host())
	return UnparkView{RegistrationView: held.View(after), WasParked: before.Parked && !before.Paused}, err
}

// PauseView answers a pause or a resume: the registration after it, and
// whether it changed (false: it was already so, nothing written).
type PauseView struct {
	RegistrationView
	Changed bool `json:"changed"`
}

// Pause pauses stream/id at at for by, saying why (store.Store.Pause);
// resume false, or resumes it (store.Store.Resume). Errors are the
// store's: journal.ErrNotFound, journal.ErrInvalid (store.ValidatePause).
func Pause(ctx context.Context, s store.Store, stream, id string, resume bool, at time.Time, by, reason string) (PauseView, error) {
	before, err := s.Get(ctx, stream, id)
	if err != nil {
		return PauseView{}, err
	}
	if resume {
		err = s.Resume(ctx, stream, id, at, by)
	} else {
		err = s.Pause(ctx, stream, id, at, by, reason)
	}
	if err != nil {
		return PauseView{}, err
	}
	after, err := s.Get(ctx, stream, id)
	if err != nil {
		return PauseView{}, err
	}
	held, err := HeldHost(ctx, s, after.Host())
	return PauseView{RegistrationView: held.View(after), Changed: before.Paused != after.Paused}, err
}

// ResendView answers a resend: the registration (its cursor untouched),
// the record queued to be sent again, who asked, and whether this asking
// queued it (false: it was queued already; that resend stays and goes out
// once).
type ResendView struct {
	RegistrationView
	Seq    uint64 `json:"seq"`
	By     string `json:"by"`
	Queued bool   `json:"queued"`
}

// Resend queues record seq of stream/id to be sent again, out of band, at
// at for by (store.Store.Resend). Errors are the store's: journal.ErrNotFound,
// journal.ErrInvalid naming "seq" (store.CheckResend) or "by"; a
// *store.PrunedError.
func Resend(ctx context.Context, s store.Store, stream, id string, seq uint64, at time.Time, by string) (ResendView, error) {
	queued, err := s.Resend(ctx, stream, id, seq, at, by)
	if err != nil {
		return ResendView{}, err
	}
	st, err := s.Get(ctx, stream, id)
	if err != nil {
		return ResendView{}, err
	}
	return ResendView{RegistrationView: Held(nil).View(st), Seq: seq, By: by, Queued: queued}, nil
}

// UnparkedAll answers an unpark of every parked registration: each one
// unparked, as it is after its unpark.
type UnparkedAll struct {
	Unparked []RegistrationView `json:"unparked"`
}

// UnparkAllQuery checks the filters of an unpark of every parked
// registration. given says whether a filter was given: an empty one (an
// unset variable in a script) is refused, since it would unpark every
// stream's or namespace's. Errors wrap journal.ErrInvalid and end "nothing
// was unparked".
func UnparkAllQuery(stream, namespace string, given func(filter string) bool) (store.ListQuery, error) {
	for _, f := range [][2]string{{"namespace", namespace}, {"stream", stream}} {
		if given(f[0]) && f[1] == "" {
			return store.ListQuery{}, journal.Invalid(f[0], "is empty; leave it out to unpark every %s's; nothing was unparked", f[0])
		}
	}
	q := store.ListQuery{Stream: stream, Namespace: namespace, Parked: true}
	if err := CheckList(q); err != nil {
		return q, fmt.Errorf("%w; nothing was unparked", err)
	}
	return q, nil
}

// CheckList refuses a filter of a registration list that no registration
// can match, and a list after a registration that does not name both its
// stream and its id. Errors wrap journal.ErrInvalid and name the field as
// the APIs do (stream, namespace, after_stream, after_id).
func CheckList(q store.ListQuery) error {
	switch {
	case q.After.Stream != "" && q.After.ID == "":
		return journal.Invalid("after_id", "is missing: a list after a registration takes its stream and its id")
	case q.After.ID != "" && q.After.Stream == "":
		return journal.Invalid("after_stream", "is missing: a list after a registration takes its stream and its id")
	}
	for _, f := range [][2]string{{"stream", q.Stream}, {"after_stream", q.After.Stream}} {
		if err := journal.ValidateStream(f[1]); f[1] != "" && err != nil {
			if inv, ok := errors.AsType[*journal.InvalidError](err); ok {
				err = &journal.InvalidError{Field: f[0], Reason: inv.Reason}
			}
			return err
		}
	}
	if q.After.ID != "" {
		if err := journal.ValidateID("after_id", q.After.ID); err != nil {
			return err
		}
	}
	if q.Namespace != "" {
		return store.ValidateNamespace(q.Namespace)
	}
	return nil
}

// UnparkAll unparks, at at, every parked registration q matches, one by
// one, each with its evidence; one unregistered since it was listed is left
// out, as is one a scoped s refuses (ErrForbidden: MayChange), which is
// another's to unpark. Another error stops it, naming the registration
// it failed on; those unparked before it come with it and stay unparked.
func UnparkAll(ctx context.Context, s store.Store, q store.ListQuery, at time.Time) (UnparkedAll, error) {
	q.Parked = true
	parked, err := store.AllRegistrations(ctx, s, q)
	if err != nil {
		return UnparkedAll{Unparked: Held(nil).Views(nil)}, err
	}
	done := []store.Status{}
	fail := func(format string, p store.Status, err error) (UnparkedAll, error) {
		return UnparkedAll{Unparked: Held(nil).Views(done)},
			fmt.Errorf(format, len(done), len(parked), store.Name(p.Stream, p.ID), err)
	}
	parked = slices.DeleteFunc(parked, func(st store.Status) bool { return st.Paused }) // herald resume ends a pause
	for _, p := range parked {
		if err := s.Unpark(ctx, p.Stream, p.ID, at); errors.Is(err, journal.ErrNotFound) || errors.Is(err, ErrForbidden) {
			continue // unregistered since it was listed, or not this token's
		} else if err != nil {
			return fail("unparked %d of %d, then %s: %w", p, err)
		}
		after, err := s.Get(ctx, p.Stream, p.ID)
		if errors.Is(err, journal.ErrNotFound) {
			continue
		}
		if err != nil { // unparked, not read back: shown as listed, unparked
			p.Parked, p.ParkedAt = false, time.Time{}
			done = append(done, p)
			return fail("unparked %d of %d, then reading %s back: %w", p, err)
		}
		done = append(done, after)
	}
	held, err := HeldHosts(ctx, s) // those held for their host say until when, as Unpark's view does
	if err != nil {
		return UnparkedAll{Unparked: Held(nil).Views(done)}, fmt.Errorf("unparked %d of %d, then reading the hosts' health: %w", len(done), len(parked), err)
	}
	return UnparkedAll{Unparked: held.Views(done)}, nil
}

// Evidence lists a registration's evidence, newest first, at most limit
// rows (0: the store's default), with each redirect's Location redacted as
// URLs are. Errors are the store's.
func Evidence(ctx context.Context, s store.Store, stream, id string, limit int) ([]store.Evidence, error) {
	evs, err := s.Evidence(ctx, stream, id, limit)
	if err != nil {
		return nil, err
	}
	for i := range evs {
		evs[i].Location = RedactURL(evs[i].Location)
	}
	if evs == nil {
		evs = []store.Evidence{}
	}
	return evs, nil
}

// Prune runs one pass of retention at q: batches until one is not full.
// between, if set, is called after each full batch with the batches so far
// and their total; its error ends the pass early, without an error.
func Prune(ctx context.Context, r store.Retention, q store.PruneQuery, between func(batches int, total store.PruneReport) error) (store.PruneReport, error) {
	var total store.PruneReport
	for n := 1; ; n++ {
		rep, err := r.Prune(ctx, q)
		total = total.Add(rep)
		total.More = false
		if err != nil || !rep.More {
			return total, err
		}
		if between != nil && between(n, total) != nil {
			return total, nil
		}
	}
}

// SetRate gives registration stream/id rate r (zero: no limit), as herald
// register --rate does, keeping the rest of it (destination, config,
// cursor, retry state), through Update. It applies from the registration's
// next burst. Errors: Update's (journal.ErrNotFound; journal.ErrInvalid for
// a bad rate or a registration a subscription made), or journal.ErrInvalid
// naming config when its stored config does not open (storing it again
// would lose it).
func SetRate(ctx context.Context, s store.Store, stream, id string, r store.Rate) (RegistrationView, error) {
	st, err := Update(ctx, s, stream, id, func(st store.Status) (store.Registration, error) {
		if st.ConfigError != "" {
			return st.Registration, journal.Invalid("config", "%s: its rate cannot be set while its stored config does not open", st.ConfigError)
		}
		reg := st.Registration
		reg.Rate = r
		return reg, nil
	})
	if err != nil {
		return RegistrationView{}, err
	}
	held, err := HeldHosts(ctx, s)
	return held.View(st), err
}

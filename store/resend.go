package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// An operator's resend (Store.Resend) delivers one record a registration
// already acknowledged once more, out of band: a worker of its namespace
// claims it (DueResends, under a lease of its own, so two workers never send
// it at once), sends it once with the message the registration's projection
// makes of it (its original id), and stores the answer as an EventResent
// evidence row (Resent). The cursor, the attempts, the backoff and a pause
// or park stay as they were: a paused registration is resent to, as the
// operator asked. A resend pending goes with its registration.

// Resend is a pending resend as DueResends claimed it.
type Resend struct {
	// Registration is the registration as stored, its config opened; its
	// LeaseOwner and LeaseUntil are its turns', not the resend's.
	Registration Registration
	Seq          uint64    // the record to send again
	At           time.Time // when it was asked for (Store.Resend's at)
	By           string    // who asked
	Owner        string    // the resend's lease owner, DueResends' q.Owner
}

// Claim returns the claim a resend returned by DueResends carries.
func (r Resend) Claim() ResendClaim {
	return ResendClaim{Claim: Claim{Stream: r.Registration.Stream, ID: r.Registration.ID, Owner: r.Owner}, Seq: r.Seq}
}

// ResendClaim is what a worker holds while it sends a claimed resend; its
// writes (Resent, RenewResends) apply only while Owner holds it.
type ResendClaim struct {
	Claim
	Seq uint64
}

// Validate checks a resend claim: Claim.Validate and a seq. Errors wrap
// journal.ErrInvalid.
func (c ResendClaim) Validate() error {
	if err := c.Claim.Validate(); err != nil {
		return err
	}
	if c.Seq == 0 {
		return journal.Invalid("seq", "is 0: seqs are 1-based")
	}
	return nil
}

// LeaseLost is the ErrLeaseLost of Resent under c, naming the resend.
func (c ResendClaim) LeaseLost() error {
	return fmt.Errorf("resend of #%d to %s, claim %s: %w", c.Seq, Name(c.Stream, c.ID), c.Owner, ErrLeaseLost)
}

// ResendBatch is what DueResends claimed.
type ResendBatch struct {
	Resends []Resend // oldest asked first
	More    bool     // more than the query's Limit were pending
}

// CheckResend is Store.Resend's rule for record seq, of kind kind ("": not
// known yet), of a registration whose cursor is next and whose kinds are
// kinds, in a stream whose low-water mark is oldest: a record already
// acknowledged (1 <= seq < next), retained, and of a kind the registration
// wants (Registration.Wants: one it does not was passed without a message,
// so a resend would send nothing). Errors wrap journal.ErrInvalid naming
// "seq"; a *PrunedError below oldest.
func CheckResend(stream string, seq, next, oldest uint64, kinds []string, kind string) error {
	switch {
	case seq == 0:
		return journal.Invalid("seq", "is 0: seqs are 1-based")
	case seq >= next:
		return journal.Invalid("seq", "#%d is at or past the cursor (%d): it has not been acknowledged, and will be delivered in order; resend is for records already delivered", seq, next)
	}
	if err := CheckRetained(stream, seq, oldest); err != nil {
		return err
	}
	if kind != "" && !(Registration{Kinds: kinds}).Wants(kind) {
		return journal.Invalid("seq", "#%d is a record of kind %s, which this registration does not want (its kinds: %s): it was passed without a message, and a resend would send nothing", seq, journal.Shown(kind), strings.Join(kinds, ", "))
	}
	return nil
}

// ResentText is the error text of a resend's evidence: "resent for BY", or,
// when it failed, "resend for BY failed: FAILURE".
func ResentText(by, failure string) string {
	if failure == "" {
		return "resent for " + by
	}
	return "resend for " + by + " failed: " + failure
}

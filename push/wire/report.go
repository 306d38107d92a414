package wire

import (
	"time"

	"github.com/heraldpush/herald/store"
)

// Hooks observe a worker; nil fields are skipped. took is wall-clock time;
// err a store's or journal's.
type Hooks struct {
	Attempt     func(Attempt)                                                    // after every delivery attempt
	Turn        func(at time.Time, r SweepReport, took time.Duration, err error) // after every turn (r.Registrations 1)
	Claim       func(at time.Time, claimed int, err error)                       // after every Store.Due
	Sweep       func(at time.Time, r SweepReport, took time.Duration, err error) // after every RunOnce
	HostFailure func(store.Host)                                                 // after every host-level failure, the host as stored
	Slow        func(r store.Registration, yields bool)                          // a turn's message waited push.SlowAfter: its turn left MaxInFlight; yields: it ends at its next record when a claim waits (past the slow budget, or none)
}

// Attempt describes one delivery attempt, for Hooks.Attempt.
type Attempt struct {
	Registration store.Registration
	Seq          uint64
	MessageID    string
	At           time.Time // the sweep's instant
	Outcome      Outcome
}

// SweepReport counts what one RunOnce, or one turn (Hooks.Turn), did.
type SweepReport struct {
	Registrations int  `json:"registrations"` // registrations claimed and served
	Records       int  `json:"records"`       // records acknowledged (the cursor moved past them)
	Deliveries    int  `json:"deliveries"`    // messages accepted (2xx)
	Retries       int  `json:"retries"`       // registrations that failed and will retry later
	Completed     int  `json:"completed"`     // registrations whose final record was acknowledged (now deleted)
	Parked        int  `json:"parked"`        // registrations parked (ceiling reached or permanent refusal)
	Skipped       int  `json:"skipped"`       // messages rejected and moved past by the skip policy
	Unserved      int  `json:"unserved"`      // due registrations of other namespaces, left to their workers
	Errors        int  `json:"errors"`        // turns ended by a store or journal error
	HostFailures  int  `json:"host_failures"` // turns ended by a host-level failure (no attempt charged; see HostStore)
	Resends       int  `json:"resends"`       // records resent out of band (Store.Resend), whatever the answer: the evidence says it
	LeasesLost    int  `json:"leases_lost"`   // turns whose lease was taken over (by another worker or an operator) before they could save
	Backlog       int  `json:"backlog"`       // turns that ended with records still behind the cursor (a claim waited for the slot, or the budget was spent): sweep again soon
	Paced         int  `json:"paced"`         // turns that ended with records still behind the cursor that their registration's rate holds (Registration.PacedUntil): sweep again then
	Saturated     bool `json:"saturated"`     // more were due than the limit: sweep again soon
}

// NeedsAttention reports whether a scheduler or operator should act: sweep
// again soon (Saturated, Backlog), or see to a parked registration.
func (r SweepReport) NeedsAttention() bool { return r.Saturated || r.Backlog > 0 || r.Parked > 0 }

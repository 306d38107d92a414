package push

// SweepReport says what one RunOnce did (or one turn: Hooks.Turn). Counts
// are of that sweep or turn only.
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
	LeasesLost    int  `json:"leases_lost"`   // turns whose lease was taken over (by another worker or an operator) before they could save
	Backlog       int  `json:"backlog"`       // turns that ended with records still behind the cursor (a claim waited for the slot, or the budget was spent): sweep again soon
	Saturated     bool `json:"saturated"`     // more were due than the limit: sweep again soon
}

// NeedsAttention reports whether a scheduler or an operator should act on a
// RunOnce report: the sweep could not keep up (Saturated: more were due than
// its limit; or a Backlog left behind cursors), so sweep again soon; or it
// parked a registration.
func (r SweepReport) NeedsAttention() bool { return r.Saturated || r.Backlog > 0 || r.Parked > 0 }

func (r *SweepReport) add(t SweepReport) {
	r.Records += t.Records
	r.Deliveries += t.Deliveries
	r.Retries += t.Retries
	r.Completed += t.Completed
	r.Parked += t.Parked
	r.Skipped += t.Skipped
	r.LeasesLost += t.LeasesLost
	r.Backlog += t.Backlog
	r.HostFailures += t.HostFailures
	r.Errors += t.Errors
}

package chaos

import (
	"fmt"
	"strconv"
	"time"
)

// Environment variables the harness reads.
const (
	// EnvMode selects the size of the runs: "" or "short" (CI), "long".
	EnvMode = "HERALD_CHAOS"
	// EnvSeed replays the plan of an earlier run: a decimal int64.
	EnvSeed = "HERALD_CHAOS_SEED"
	// EnvReport names a file the scenarios append their figures to, one
	// JSON object a line.
	EnvReport = "HERALD_CHAOS_REPORT"
)

// Mode is the size of a run.
type Mode struct {
	Name    string
	Crash   CrashPlan
	Restart CrashPlan // the PostgreSQL restart scenario reuses the crash layout, without kills
	Faults  FaultPlan
}

// CrashPlan sizes the crash scenario.
type CrashPlan struct {
	Workers          int           // herald run processes
	Streams          int           // streams, each with RegsPerStream registrations
	RegsPerStream    int           // registrations per stream (fan-out)
	RecordsPerStream int           // records appended to each stream
	Rounds           int           // append --file calls the records are split into
	Kills            int           // SIGKILLs (0 for the restart scenario)
	Restarts         int           // PostgreSQL restarts (restart scenario only)
	DrainPage        int           // --drain-page: the bound on duplicates per kill
	Lease            time.Duration // --lease: how long a dead worker's claims stay hidden
	Stall            time.Duration // no new delivery for this long fails the run
	// Windows are the registrations' windows, in turn (none: 1 each);
	// MaxPerHost is the workers' --max-per-host (0: the default), which
	// bounds a window on the fleet's one receiver host.
	Windows    []int
	MaxPerHost int
}

// Records is the number of records the plan appends.
func (p CrashPlan) Records() int { return p.Streams * p.RecordsPerStream }

// Registrations is the number of registrations the plan makes.
func (p CrashPlan) Registrations() int { return p.Streams * p.RegsPerStream }

// Deliveries is the number of distinct (registration, record) pairs the
// receivers must see.
func (p CrashPlan) Deliveries() int { return p.Registrations() * p.RecordsPerStream }

// FaultPlan sizes the faulty receivers scenario.
type FaultPlan struct {
	PerProfile int // registrations per receiver profile
	Records    int // records per registration's stream
}

// windows are the fleets' registrations' windows, in turn: v1's strict
// order, a small window and a far receiver's. A window never reaches past
// the drain page or the backlog, so the crash plans' pages are at least 16
// and their rounds append more than a page to each stream.
var windows = []int{1, 4, 16}

var modes = map[string]Mode{
	"short": {
		Name: "short",
		Crash: CrashPlan{Workers: 3, Streams: 60, RegsPerStream: 2, RecordsPerStream: 40, Rounds: 2,
			Kills: 10, DrainPage: 16, Lease: 3 * time.Second, Stall: 60 * time.Second, Windows: windows, MaxPerHost: 64},
		Restart: CrashPlan{Workers: 2, Streams: 40, RegsPerStream: 2, RecordsPerStream: 30, Rounds: 6,
			Restarts: 2, DrainPage: 16, Lease: 3 * time.Second, Stall: 90 * time.Second, Windows: windows, MaxPerHost: 64},
		Faults: FaultPlan{PerProfile: 1, Records: 4},
	},
	"long": {
		Name: "long",
		Crash: CrashPlan{Workers: 4, Streams: 500, RegsPerStream: 2, RecordsPerStream: 200, Rounds: 5,
			Kills: 300, DrainPage: 25, Lease: 5 * time.Second, Stall: 3 * time.Minute, Windows: windows, MaxPerHost: 64},
		Restart: CrashPlan{Workers: 4, Streams: 200, RegsPerStream: 2, RecordsPerStream: 100, Rounds: 20,
			Restarts: 3, DrainPage: 25, Lease: 5 * time.Second, Stall: 3 * time.Minute, Windows: windows, MaxPerHost: 64},
		Faults: FaultPlan{PerProfile: 4, Records: 6},
	},
}

// modeFromEnv returns the mode and seed the environment asks for. A mode
// or seed it does not know is an error, never a silent default.
func modeFromEnv(getenv func(string) string, fresh func() int64) (Mode, int64, error) {
	name := getenv(EnvMode)
	if name == "" {
		name = "short"
	}
	m, ok := modes[name]
	if !ok {
		return Mode{}, 0, fmt.Errorf("%s=%q: want short (the default) or long", EnvMode, name)
	}
	seed := fresh()
	if s := getenv(EnvSeed); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Mode{}, 0, fmt.Errorf("%s=%q: want a decimal int64", EnvSeed, s)
		}
		seed = n
	}
	return m, seed, nil
}

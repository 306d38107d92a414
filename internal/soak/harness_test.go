package soak

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// Config shapes a soak. Times are in ticks (simulated seconds).
type Config struct {
	Ticks       int           // how long the load runs
	Streams     int           // streams appended to, round robin
	PerTick     int           // records appended per tick
	Receivers   int           // healthy registrations per stream
	Payload     int           // payload bytes per record
	Retain      time.Duration // the retention age
	PruneEvery  int           // ticks between prune passes
	SampleEvery int           // ticks between samples
	DownFor     int           // the flaky receiver is down this long in every cycle of 2*DownFor ticks
}

// Sample is what the database keeps at one tick.
type Sample struct {
	Tick         int
	Appended     int           // records appended so far
	Retained     uint64        // records the journal retains
	Bytes        int64         // their payload bytes
	Disk         int64         // the database's size on disk, from the size function
	PruneTime    time.Duration // wall time of the last prune pass
	PruneRecords int           // records it removed
}

// Result is what a soak saw.
type Result struct {
	Samples  []Sample
	Appended int                  // records appended per stream
	Received map[store.Key]uint64 // per registration: the highest seq received in order
	Gaps     []string             // out-of-order or missing deliveries, in words (empty: none)
}

// Clock is the soak's simulated time, for the store's WithClock.
type Clock struct{ ns atomic.Int64 }

// NewClock starts at t0.
func NewClock(t0 time.Time) *Clock { c := &Clock{}; c.ns.Store(t0.UnixNano()); return c }

// Now is the clock's instant.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

func (c *Clock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Run runs the soak on b, whose appends are stamped by clock. size reports
// the database's size on disk; newWorker makes the worker, whose transport
// must reach loopback and whose projection must be Projection.
func Run(ctx context.Context, b store.Backend, clock *Clock, size func(context.Context) (int64, error), newWorker func(store.Store, journal.Journal) (*push.Worker, error), cfg Config) (Result, error) {
	res := Result{Received: map[store.Key]uint64{}}
	var mu sync.Mutex
	down := atomic.Bool{}
	recv := func(w http.ResponseWriter, r *http.Request) {
		key := store.Key{Stream: r.URL.Query().Get("stream"), ID: r.URL.Query().Get("id")}
		if strings.HasPrefix(key.ID, "flaky") && down.Load() {
			// An answer about the record (not the host's health): it
			// counts against the registration, which parks.
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "cannot store this activity right now")
			return
		}
		seq, err := strconv.ParseUint(r.Header.Get(SeqHeader), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		switch last := res.Received[key]; {
		case err != nil:
			res.Gaps = append(res.Gaps, fmt.Sprintf("%v: no seq: %v", key, err))
		case seq <= last: // a repeat (at-least-once): fine
		case seq != last+1:
			res.Gaps = append(res.Gaps, fmt.Sprintf("%v: #%d after #%d", key, seq, last))
		default:
			res.Received[key] = seq
		}
		w.WriteHeader(http.StatusNoContent)
	}
	srv := httptest.NewServer(http.HandlerFunc(recv))
	defer srv.Close()
	flaky := httptest.NewServer(http.HandlerFunc(recv))
	defer flaky.Close()

	w, err := newWorker(b, b)
	if err != nil {
		return res, err
	}
	t0 := clock.Now()
	for s := range cfg.Streams {
		stream := fmt.Sprintf("soak/%d", s)
		for r := range cfg.Receivers + 1 { // the last one is soak/0's flaky receiver, on a host of its own
			id, base := fmt.Sprintf("r%d", r), srv.URL
			if r == cfg.Receivers {
				if s > 0 {
					break
				}
				id, base = "flaky", flaky.URL
			}
			_, err := w.Register(ctx, push.Registration{Stream: stream, ID: id, Namespace: w.Namespace(),
				URL: fmt.Sprintf("%s/?stream=%s&id=%s", base, stream, id)})
			if err != nil {
				return res, err
			}
		}
	}
	payload := []byte(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", max(cfg.Payload-10, 0))))
	var pruneTime time.Duration
	var pruned, appended int
	perStream := make([]int, cfg.Streams)
	for tick := 1; tick <= cfg.Ticks; tick++ {
		now := t0.Add(time.Duration(tick) * time.Second)
		clock.set(now)
		down.Store(cfg.DownFor > 0 && tick%(2*cfg.DownFor) < cfg.DownFor)
		for i := range cfg.PerTick {
			s := (tick*cfg.PerTick + i) % cfg.Streams
			perStream[s]++
			appended++
			_, err := b.Append(ctx, fmt.Sprintf("soak/%d", s), journal.Entry{
				ID: fmt.Sprintf("soak-%d-%d", s, perStream[s]), Kind: "soak", Payload: payload})
			if err != nil {
				return res, fmt.Errorf("tick %d: append: %w", tick, err)
			}
		}
		if _, err := w.RunOnce(ctx, now, 1000); err != nil {
			return res, fmt.Errorf("tick %d: sweep: %w", tick, err)
		}
		if cfg.DownFor > 0 && tick%(2*cfg.DownFor) == cfg.DownFor {
			// The receiver is back: the operator unparks it.
			if err := b.Unpark(ctx, "soak/0", "flaky", now); err != nil {
				return res, fmt.Errorf("tick %d: unpark: %w", tick, err)
			}
		}
		if tick%cfg.PruneEvery == 0 {
			started := time.Now()
			pruned = 0
			for {
				rep, err := b.Prune(ctx, store.PruneQuery{At: now, Retain: cfg.Retain})
				if err != nil {
					return res, fmt.Errorf("tick %d: prune: %w", tick, err)
				}
				pruned += rep.Records
				if !rep.More {
					break
				}
			}
			pruneTime = time.Since(started)
		}
		if tick%cfg.SampleEvery == 0 || tick == cfg.Ticks {
			smp, err := measure(ctx, b, size)
			if err != nil {
				return res, err
			}
			smp.Tick, smp.Appended, smp.PruneTime, smp.PruneRecords = tick, appended, pruneTime, pruned
			res.Samples = append(res.Samples, smp)
		}
	}
	// Drain: the flaky receiver comes back for good, is unparked, and every
	// registration catches up.
	down.Store(false)
	end := t0.Add(time.Duration(cfg.Ticks) * time.Second)
	if err := b.Unpark(ctx, "soak/0", "flaky", end); err != nil {
		return res, err
	}
	for i := range 10000 {
		at := end.Add(time.Duration(i) * time.Hour) // past any backoff
		rep, err := w.RunOnce(ctx, at, 1000)
		if err != nil {
			return res, err
		}
		if rep.Registrations == 0 {
			break
		}
	}
	res.Appended = perStream[0]
	return res, nil
}

func measure(ctx context.Context, b store.Backend, size func(context.Context) (int64, error)) (Sample, error) {
	var smp Sample
	q := store.StreamQuery{Limit: store.MaxListLimit}
	for {
		infos, err := b.Streams(ctx, q)
		if err != nil {
			return smp, err
		}
		for _, s := range infos {
			smp.Retained += s.Records
			smp.Bytes += s.Bytes
		}
		if len(infos) < q.Limit {
			break
		}
		q.After = infos[len(infos)-1].Stream
	}
	disk, err := size(ctx)
	smp.Disk = disk
	return smp, err
}

// SeqHeader carries a record's seq to the soak's receivers.
const SeqHeader = "Soak-Seq"

// Projection is one message per record, with the seq in SeqHeader.
type Projection struct{}

// Messages implements push.Projection.
func (Projection) Messages(_ context.Context, rec journal.Record, _ push.Registration) ([]push.Message, error) {
	h := http.Header{}
	h.Set(SeqHeader, strconv.FormatUint(rec.Seq, 10))
	return []push.Message{{ID: rec.ID, ContentType: "application/json", Header: h, Body: rec.Payload}}, nil
}

// Terminal implements push.Projection.
func (Projection) Terminal(rec journal.Record) bool { return rec.Final }

// Namespace implements push.Projection.
func (Projection) Namespace() string { return "webhook" }

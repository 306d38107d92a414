package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldpush/herald/bench/internal/wire"
)

// The slots workload's shapes, as issue 37 sets them.
const (
	slowAnswer    = 12 * time.Second       // the slow receivers answer 204 after this
	slowBacklog   = 30                     // records of each slow registration
	healthyEvery  = 500 * time.Millisecond // one record to the healthy registration this often
	sharedBad     = 8                      // registrations on the healthy host:port whose path answers 503
	sharedBacklog = 3                      // records of each of them
)

// slotsCase is K slow registrations on hosts of their own ("slow"), or
// sharedBad registrations on the healthy receiver's own host:port whose
// path answers 503 without Retry-After ("shared").
type slotsCase struct {
	shape string
	k     int
}

func (c slotsCase) String() string {
	if c.shape == "shared" {
		return fmt.Sprintf("%d registrations on the healthy host:port answering 503, %d records each", c.k, sharedBacklog)
	}
	return fmt.Sprintf("%d slow registrations (answer after %v), %d records each", c.k, slowAnswer, slowBacklog)
}

type slotsRun struct {
	c              slotsCase
	store          string
	appended       int
	lat            []time.Duration // append → receipt of the healthy records that arrived, sorted
	slowIn         []int           // per slow receiver: requests that arrived in the window
	badReqs        int
	dups           int
	appendMax      time.Duration
	window, waited time.Duration
	daemonCPU      time.Duration
	start          time.Time
	load0, load1   string
}

// slots is issue 37's "slow receivers take every slot" and "one path can
// take a shared host down".
func slots(ctx context.Context, e *env, cfg config, rep *report) error {
	var cases []slotsCase
	for _, k := range cfg.slotsK {
		cases = append(cases, slotsCase{shape: "slow", k: k})
	}
	cases = append(cases, slotsCase{shape: "shared", k: sharedBad})
	var runs []slotsRun
	for run := 1; run <= cfg.runs; run++ {
		for _, c := range cases {
			for _, store := range cfg.stores {
				logf("slots run %d/%d: %s, %s (load %s)", run, cfg.runs, store, c, loadavg())
				r, err := slotsOne(ctx, e, cfg, store, c, run)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", store, c, err)
				}
				logf("  healthy: %d of %d, p50 %s s, max %s s; slow: %s", len(r.lat), r.appended, r.latCell(0.5), r.latCell(1), r.slowCell())
				runs = append(runs, r)
			}
		}
	}
	rep.printf("### Slots: slow receivers and a broken path beside a healthy one (issue 37)\n\n")
	rep.printf("`herald run` with its defaults plus `--allow-http --allow-private-network` and `--api-addr`; registrations and appends over the HTTP API. **slow**: K webhook registrations, each on a loopback host of its own (127.2.x.y, one port for all) whose receiver answers 204 %v after reading the request, each with a backlog of %d records on a stream of its own, appended before the healthy appends start. **shared**: %d registrations on the healthy receiver's own host:port, each with %d records, whose path answers 503 without Retry-After. In both, one healthy webhook registration (its own host, or the shared one) gets one record every %v for %v; append → receipt is from the append's answer to the receiver reading the request (by `Herald-Seq`). A slow receiver's count is the requests that arrived at it in that window (one per %v would be %d).\n\n",
		slowAnswer, slowBacklog, sharedBad, sharedBacklog, healthyEvery, cfg.slotsFor, slowAnswer, int(cfg.slotsFor/slowAnswer))
	rep.printf("| store | case | healthy received | p50 s | max s | slow receivers: requests in the window, min / median / max | slow receivers with none | 503 answers | longest append ms | started (UTC), load |\n|---|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range runs {
		name := fmt.Sprintf("slow, K = %d", r.c.k)
		bad := "–"
		if r.c.shape == "shared" {
			name = fmt.Sprintf("shared host, %d paths answering 503", r.c.k)
			bad = strconv.Itoa(r.badReqs)
		}
		none := "–"
		if r.c.shape == "slow" {
			n := 0
			for _, v := range r.slowIn {
				if v == 0 {
					n++
				}
			}
			none = fmt.Sprintf("%d of %d", n, len(r.slowIn))
		}
		rep.printf("| %s | %s | %d of %d | %s | %s | %s | %s | %s | %s | %s, %s → %s |\n", r.store, name, len(r.lat), r.appended,
			r.latCell(0.5), r.latCell(1), r.slowCell(), none, bad, fmtNum(ms(r.appendMax), 0), r.start.UTC().Format("15:04:05"), r.load0, r.load1)
	}
	rep.printf("\nA record not received when the case ended (%v after the last append at most) counts as later than that: its percentile reads `> …`.\n\n", slotsDrain)
	return nil
}

// slotsDrain is how long a case waits after the last healthy append for
// the healthy records still on their way.
const slotsDrain = 20 * time.Second

func slotsOne(ctx context.Context, e *env, cfg config, store string, c slotsCase, run int) (slotsRun, error) {
	r := slotsRun{c: c, store: store, start: time.Now(), load0: loadavg(), window: cfg.slotsFor}
	var (
		mu       sync.Mutex
		slowAt   = make([][]time.Time, c.k) // arrivals at each slow receiver
		healthy  = map[uint64]time.Time{}   // first receipt of each healthy seq
		badReqs  int
		dups     int
		received = make(chan struct{}, 1)
	)
	hosts := c.k + 1 // slow receivers on 0…k-1, the healthy one on k
	healthyHost := c.k
	if c.shape == "shared" {
		hosts, healthyHost = 1, 0
	}
	var farm *hostFarm
	farm, err := startFarm(2, hosts, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		now := time.Now()
		switch p := req.URL.Path; {
		case p == "/healthy":
			seq, _ := strconv.ParseUint(req.Header.Get("Herald-Seq"), 10, 64)
			mu.Lock()
			if _, ok := healthy[seq]; ok {
				dups++
			} else {
				healthy[seq] = now
			}
			mu.Unlock()
			select {
			case received <- struct{}{}:
			default:
			}
			w.WriteHeader(http.StatusNoContent)
		case strings.HasPrefix(p, "/slow/"):
			j, err := strconv.Atoi(strings.TrimPrefix(p, "/slow/"))
			if err != nil || j < 0 || j >= c.k {
				http.NotFound(w, req)
				return
			}
			mu.Lock()
			slowAt[j] = append(slowAt[j], now)
			mu.Unlock()
			if !farm.hold(req, slowAnswer) {
				panic(http.ErrAbortHandler) // the case ended first: no answer
			}
			w.WriteHeader(http.StatusNoContent)
		case strings.HasPrefix(p, "/bad/"):
			mu.Lock()
			badReqs++
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, req)
		}
	}))
	if err != nil {
		return r, err
	}
	defer farm.close()

	name := fmt.Sprintf("slots_%s_%s%d_%d", store, c.shape, c.k, run)
	database, drop, err := freshDatabase(ctx, e, store, name)
	if err != nil {
		return r, err
	}
	defer drop()
	d, err := startAPIDaemon(ctx, e, "herald-slots", database, nil)
	if err != nil {
		return r, err
	}
	defer d.p.stop() // after a failure; a second stop returns at once
	webhookCfg := func(i int) any { return map[string]any{"secrets": []string{wire.Secret(i)}} }
	regs := []apiRegistration{{Stream: "healthy", ID: "healthy", Namespace: "webhook", URL: farm.url(healthyHost) + "/healthy", Config: webhookCfg(0)}}
	other, path, backlog := "slow", "/slow/", slowBacklog
	if c.shape == "shared" {
		other, path, backlog = "bad", "/bad/", sharedBacklog
	}
	for j := range c.k {
		host := j
		if c.shape == "shared" {
			host = healthyHost
		}
		regs = append(regs, apiRegistration{Stream: fmt.Sprintf("%s/%d", other, j), ID: other, Namespace: "webhook",
			URL: fmt.Sprintf("%s%s%d", farm.url(host), path, j), Config: webhookCfg(j + 1)})
	}
	if _, err := d.register(ctx, regs); err != nil {
		return r, err
	}
	if err := parallel(ctx, 8, c.k, func(j int) error {
		recs := make([]apiRecord, backlog)
		for i := range recs {
			recs[i] = apiRecord{ID: fmt.Sprintf("%s-%d-%d", other, j, i), Kind: "order.updated", Payload: map[string]int{"n": i}}
		}
		_, err := d.appendRecords(ctx, fmt.Sprintf("%s/%d", other, j), recs...)
		return err
	}); err != nil {
		return r, err
	}

	// The healthy appends, on a fixed schedule, each in a goroutine of its
	// own so that a slow append does not delay the next.
	type appended struct {
		seq  uint64
		at   time.Time
		took time.Duration
		err  error
	}
	n := int(cfg.slotsFor / healthyEvery)
	results := make(chan appended, n)
	first := time.Now()
	for k := range n {
		at := first.Add(time.Duration(k) * healthyEvery)
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Until(at)):
		}
		go func() {
			sent := time.Now()
			seqs, err := d.appendRecords(ctx, "healthy", apiRecord{ID: fmt.Sprintf("healthy-%d", k), Kind: "order.updated", Payload: map[string]int{"n": k}})
			a := appended{at: time.Now(), took: time.Since(sent), err: err}
			if err == nil && len(seqs) == 1 {
				a.seq = seqs[0]
			}
			results <- a
		}()
	}
	commits := map[uint64]time.Time{}
	for range n {
		a := <-results
		if a.err != nil {
			return r, a.err
		}
		commits[a.seq] = a.at
		r.appendMax = max(r.appendMax, a.took)
	}
	r.appended = n
	windowEnd := time.Now()
	for deadline := time.Now().Add(slotsDrain); time.Now().Before(deadline); {
		mu.Lock()
		all := true
		for seq := range commits {
			if _, ok := healthy[seq]; !ok {
				all = false
				break
			}
		}
		mu.Unlock()
		if all {
			break
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-received:
		case <-time.After(100 * time.Millisecond):
		}
	}
	r.waited = time.Since(windowEnd)
	r.daemonCPU = d.p.cpu()
	farm.close() // the slow requests in flight end now, so the daemon stops at once
	if err := d.p.stop(); err != nil {
		logf("  stopping the daemon: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for seq, at := range commits {
		if got, ok := healthy[seq]; ok {
			r.lat = append(r.lat, got.Sub(at))
		}
	}
	slices.Sort(r.lat)
	for _, arrivals := range slowAt {
		in := 0
		for _, t := range arrivals {
			if !t.Before(first) && t.Before(first.Add(cfg.slotsFor)) {
				in++
			}
		}
		r.slowIn = append(r.slowIn, in)
	}
	r.badReqs, r.dups = badReqs, dups
	r.load1 = loadavg()
	return r, nil
}

// latCell is the q-quantile (nearest rank) of the healthy records'
// append → receipt in seconds, counting those not received as later than
// any that were.
func (r slotsRun) latCell(q float64) string {
	k := max(int(q*float64(r.appended)+0.999999), 1)
	if k > len(r.lat) {
		return "> " + fmtNum(r.waited.Seconds(), 0)
	}
	return fmtNum(r.lat[k-1].Seconds(), 2)
}

// slowCell is min / median / max of the slow receivers' requests in the
// window.
func (r slotsRun) slowCell() string {
	if len(r.slowIn) == 0 || r.c.shape != "slow" {
		return "–"
	}
	s := make(sample, len(r.slowIn))
	for i, v := range r.slowIn {
		s[i] = float64(v)
	}
	return fmt.Sprintf("%s / %s / %s", fmtNum(s.min(), 0), fmtNum(s.median(), 0), fmtNum(s.max(), 0))
}

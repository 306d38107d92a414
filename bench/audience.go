package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/store/postgres"
)

// The audience's hosts, as issue 37 sets them: 10 inboxes a host; of every
// 100 hosts 2 never answer and 5 answer after 5 s, the others after 50 ms.
const (
	inboxesPerHost  = 10
	audienceHealthy = 50 * time.Millisecond
	audienceSlow    = 5 * time.Second
)

// hostKind is what host h of the audience does: "silent" (holds every
// request until the client gives up), "slow" (answers after 5 s) or
// "healthy" (after 50 ms). The pattern repeats every 100 hosts.
func hostKind(h int) string {
	switch h % 100 {
	case 0, 50:
		return "silent"
	case 10, 30, 60, 80, 95:
		return "slow"
	}
	return "healthy"
}

// audienceRun is one case's figures.
type audienceRun struct {
	store                    string
	n, hosts, healthy, slow  int
	registerTook, appendTook time.Duration
	times                    []time.Duration // append → receipt of each healthy inbox that had it, sorted
	slowGot, silentReqs      int64
	dups, unsigned           int64
	bound, took              time.Duration // the case's bound; append → the case's end
	daemonCPU, pgCPU         time.Duration
	rss                      int64
	profile                  string
	start                    time.Time
	load0, load1             string
	stmts                    []stmtStat // PostgreSQL's statements from the append to the end (-lat-statements)
}

// audience is issue 37's fediverse audience: one Create to N inboxes.
func audience(ctx context.Context, e *env, cfg config, rep *report) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	var runs []audienceRun
	for run := 1; run <= cfg.runs; run++ {
		for _, n := range cfg.audienceN {
			for _, store := range cfg.stores {
				logf("audience run %d/%d: %s, %d inboxes on %d hosts (load %s)", run, cfg.runs, store, n, hostsFor(n), loadavg())
				r, err := audienceCase(ctx, e, cfg, store, n, run, pemKey)
				if err != nil {
					return fmt.Errorf("%s, %d inboxes: %w", store, n, err)
				}
				logf("  healthy p50 %s, p95 %s, p100 %s; %d of %d by 10 s, %d by 60 s", r.pct(50), r.pct(95), r.pct(100), r.by(10*time.Second), r.healthy, r.by(60*time.Second))
				runs = append(runs, r)
			}
		}
	}
	rep.printf("### A fediverse audience: one Create to N inboxes (issue 37)\n\n")
	rep.printf("One ActivityPub `Create` (a Note to Public and the followers, signed with one RSA-2048 actor key) to N inboxes, one `activitypub` registration each (stream `actor/alice`), on N/%d loopback hosts of 127.1.0.0/16 (%d inboxes a host, all hosts on one port) served by the benchmark process: of every 100 hosts 93 answer 202 %v after reading the request, 5 after %v, 2 never (the request is held until herald's 15 s timeout). `herald run` with its defaults plus `--allow-http --allow-private-network` and `--api-addr` (metrics and admin servers off). The registrations are made over the HTTP API (`POST /v1/registrations`, 16 at once) by a first daemon, which is then stopped; a fresh one (the measured process, `HERALD_CPUPROFILE` when profiled) gets the one append (`POST /v1/records`). Times are from the append's answer to the healthy inbox's receiving the request (its body read). A case ends when every healthy and slow inbox had it, or at its bound (%v).\n\n",
		inboxesPerHost, inboxesPerHost, audienceHealthy, audienceSlow, cfg.audienceFor)
	if cfg.audienceHeld {
		rep.printf("The actor's key is held once (`herald keys add`, `-audience-held-key`): every registration's config names its `key_id` only, and each message reads the key's version from the store.\n\n")
	}
	rep.printf("| store | N | hosts | registering s (/s) | append ms | healthy | p50 s | p95 s | p100 s | by 10 s | by 60 s | by the end | slow had it | silent requests | CPU s daemon / PostgreSQL | daemon peak RSS MiB | duplicates | started (UTC), load |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---|\n")
	for _, r := range runs {
		pg := "–"
		if r.store == "postgres" {
			pg = fmtNum(r.pgCPU.Seconds(), 1)
		}
		rep.printf("| %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s (%s s) | %d of %d | %d | %s / %s | %s | %d | %s, %s → %s |\n",
			r.store, fmtNum(float64(r.n), 0), fmtNum(float64(r.hosts), 0),
			fmtNum(r.registerTook.Seconds(), 1), fmtNum(float64(r.n)/r.registerTook.Seconds(), 0), fmtNum(ms(r.appendTook), 0),
			fmtNum(float64(r.healthy), 0), r.pct(50), r.pct(95), r.pct(100),
			fmtNum(float64(r.by(10*time.Second)), 0), r.byCell(60*time.Second), fmtNum(float64(len(r.times)), 0), fmtNum(r.took.Seconds(), 0),
			r.slowGot, r.slow, r.silentReqs, fmtNum(r.daemonCPU.Seconds(), 1), pg, fmtNum(float64(r.rss)/(1<<20), 0), r.dups,
			r.start.UTC().Format("15:04:05"), r.load0, r.load1)
	}
	rep.printf("\nA percentile not reached within the bound reads `> bound`. Unsigned requests (no `Signature` header) would be counted beside the duplicates; there were %d.\n", func() (n int64) {
		for _, r := range runs {
			n += r.unsigned
		}
		return n
	}())
	for _, r := range runs {
		if len(r.stmts) > 0 {
			printStmts(rep, fmt.Sprintf("%s, %d inboxes", r.store, r.n), [][]stmtStat{r.stmts})
		}
	}
	for _, r := range runs {
		if r.profile != "" {
			rep.printf("CPU profile of the %s daemon, %d inboxes: `%s`.\n", r.store, r.n, r.profile)
		}
	}
	rep.printf("\n")
	return nil
}

func hostsFor(n int) int { return (n + inboxesPerHost - 1) / inboxesPerHost }

// audienceCase runs one store at one N.
func audienceCase(ctx context.Context, e *env, cfg config, store string, n, run int, pemKey string) (audienceRun, error) {
	r := audienceRun{store: store, n: n, hosts: hostsFor(n), bound: cfg.audienceFor, start: time.Now(), load0: loadavg()}
	got := make([]atomic.Int64, n) // unix ns of the first receipt, per inbox
	var healthyGot, slowGot, silentReqs, dups, unsigned atomic.Int64
	var farm *hostFarm
	farm, err := startFarm(1, r.hosts, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		now := time.Now().UnixNano()
		i, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/inbox/"))
		if err != nil || i < 0 || i >= n {
			http.NotFound(w, req)
			return
		}
		if req.Header.Get("Signature") == "" {
			unsigned.Add(1)
		}
		kind := hostKind(i / inboxesPerHost)
		if kind == "silent" {
			silentReqs.Add(1)
			farm.hold(req, -1)
			panic(http.ErrAbortHandler) // no answer at all, not the 200 of a handler that returns
		}
		if !got[i].CompareAndSwap(0, now) {
			dups.Add(1)
		} else if kind == "healthy" {
			healthyGot.Add(1)
		} else {
			slowGot.Add(1)
		}
		d := audienceHealthy
		if kind == "slow" {
			d = audienceSlow
		}
		if !farm.hold(req, d) {
			panic(http.ErrAbortHandler) // the case ended first: no answer
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	if err != nil {
		return r, err
	}
	defer farm.close()
	for i := range n {
		switch hostKind(i / inboxesPerHost) {
		case "healthy":
			r.healthy++
		case "slow":
			r.slow++
		}
	}

	name := fmt.Sprintf("aud_%s_%d_%d", store, n, run)
	database, drop, err := freshDatabase(ctx, e, store, name)
	if err != nil {
		return r, err
	}
	defer drop()
	const keyID = "https://social.example/users/alice#main-key"
	config := map[string]any{"key_id": keyID, "private_key": pemKey}
	if cfg.audienceHeld { // held once: every config names it
		file := filepath.Join(e.tmp, name+".pem")
		if err := os.WriteFile(file, []byte(pemKey), 0o600); err != nil {
			return r, err
		}
		out, err := exec.CommandContext(ctx, e.herald, "keys", "add", "--database", database, "--key-id", keyID, "--private-key", file).CombinedOutput()
		if err != nil {
			return r, fmt.Errorf("herald keys add: %v\n%s", err, out)
		}
		config = map[string]any{"key_id": keyID}
	}
	regs := make([]apiRegistration, n)
	for i := range regs {
		regs[i] = apiRegistration{Stream: "actor/alice", ID: fmt.Sprintf("inbox-%06d", i), Namespace: "activitypub",
			URL: fmt.Sprintf("%s/inbox/%d", farm.url(i/inboxesPerHost), i), Config: config}
	}
	d, err := startAPIDaemon(ctx, e, "herald-audience-register", database, nil)
	if err != nil {
		return r, err
	}
	r.registerTook, err = d.register(ctx, regs)
	if serr := d.p.stop(); err == nil {
		err = serr
	}
	if err != nil {
		return r, err
	}
	logf("  %d registrations in %v", n, r.registerTook.Round(time.Millisecond))

	var env []string
	if cfg.audienceProfile != "" {
		r.profile = filepath.Join(cfg.audienceProfile, fmt.Sprintf("audience-%s-%d-run%d", store, n, run))
		env = append(env, "HERALD_CPUPROFILE="+r.profile)
	}
	var pgStore *postgres.Store // for -lat-statements
	if store == "postgres" && cfg.latStatements {
		if pgStore, err = postgres.Open(ctx, withPool(database, 2), postgres.WithKeyring(keyring)); err != nil {
			return r, err
		}
		defer pgStore.Close()
	}
	pg0 := e.pgCPU()
	if d, err = startAPIDaemon(ctx, e, "herald-audience", database, env); err != nil {
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = d.p.stop()
		}
	}()
	if cfg.audienceProfile != "" {
		r.profile += "." + strconv.Itoa(d.p.pid())
	}
	time.Sleep(time.Second) // the fresh daemon's first claim (nothing due) is behind it
	if pgStore != nil {
		if err := resetStmts(ctx, pgStore); err != nil {
			return r, err
		}
	}
	sent := time.Now()
	if _, err := d.appendRecords(ctx, "actor/alice", apiRecord{ID: "https://social.example/users/alice/statuses/1/activity", Kind: "Create", Payload: createActivity()}); err != nil {
		return r, err
	}
	r.appendTook = time.Since(sent)
	t0 := time.Now() // the append's answer: the times are from here
	deadline := t0.Add(cfg.audienceFor)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for healthyGot.Load() < int64(r.healthy) || slowGot.Load() < int64(r.slow) {
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-d.p.done:
			return r, fmt.Errorf("the daemon exited (%v); see %s", d.p.err, d.p.log)
		case <-tick.C:
		}
	}
	r.took = time.Since(t0)
	r.daemonCPU, r.rss = d.p.cpu(), d.p.peakRSS()
	r.pgCPU = e.pgCPU() - pg0
	if pgStore != nil {
		if r.stmts, err = readStmts(ctx, pgStore, r.took); err != nil {
			return r, err
		}
	}
	stopped = true
	farm.close() // the held requests end now, so the daemon stops at once
	if err := d.p.stop(); err != nil {
		logf("  stopping the daemon: %v", err) // figures stand; the profile may be missing
	}
	r.load1 = loadavg()
	for i := range n {
		if hostKind(i/inboxesPerHost) == "healthy" {
			if at := got[i].Load(); at != 0 {
				r.times = append(r.times, time.Duration(at-t0.UnixNano()))
			}
		}
	}
	slices.Sort(r.times)
	r.slowGot, r.silentReqs, r.dups, r.unsigned = slowGot.Load(), silentReqs.Load(), dups.Load(), unsigned.Load()
	return r, nil
}

// pct is the time by which p % of the healthy inboxes had the post, in
// seconds, or "> bound" when fewer did within the case.
func (r audienceRun) pct(p float64) string {
	k := int(math.Ceil(p / 100 * float64(r.healthy))) // nearest rank
	if k < 1 {
		k = 1
	}
	if k > len(r.times) {
		return fmt.Sprintf("> %v", r.took.Round(time.Second))
	}
	return fmtNum(r.times[k-1].Seconds(), 2)
}

// by is how many healthy inboxes had the post within d of the append.
func (r audienceRun) by(d time.Duration) int {
	n, _ := slices.BinarySearch(r.times, d+1)
	return n
}

// byCell is by(d), or "–" when the case ended before d without every
// healthy inbox served.
func (r audienceRun) byCell(d time.Duration) string {
	if r.took < d && len(r.times) < r.healthy {
		return "–"
	}
	return fmtNum(float64(r.by(d)), 0)
}

// createActivity is the post: a Note to the Public collection and the
// actor's followers.
func createActivity() map[string]any {
	const actor = "https://social.example/users/alice"
	to := []string{"https://www.w3.org/ns/activitystreams#Public"}
	cc := []string{actor + "/followers"}
	return map[string]any{
		"@context":  "https://www.w3.org/ns/activitystreams",
		"id":        actor + "/statuses/1/activity",
		"type":      "Create",
		"actor":     actor,
		"published": "2026-12-07T02:00:00Z",
		"to":        to,
		"cc":        cc,
		"object": map[string]any{
			"id": actor + "/statuses/1", "type": "Note", "attributedTo": actor,
			"published": "2026-12-07T02:00:00Z", "to": to, "cc": cc,
			"content": "<p>One post, every follower's inbox: how long until the last healthy one has it?</p>",
		},
	}
}

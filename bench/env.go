package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/store/postgres"
)

// receiverHosts is how many other hosts the receiver also serves on: as
// many as the latency workload's streams, one receiver host each.
const receiverHosts = 100

// env is what every workload shares: the PostgreSQL server, the built
// binaries, the receiver process and the facts the report starts with.
type env struct {
	pg       *pgtest.Server
	tmp      string
	keep     bool
	herald   string // path of the herald binary
	riverBin string // path of the riverworker binary
	recv     *proc
	recvURL  string   // http://127.0.0.1:PORT
	recvURLs []string // the same receiver on other hosts (127.0.1.x)
	http     *http.Client

	machine, goVersion, pgVersion, riverVersion, pgxVersion, commit string
}

func setup(ctx context.Context, cfg config) (*env, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return nil, fmt.Errorf("run from the bench directory (cd bench && go run .): %w", err)
	}
	e := &env{keep: cfg.keep, http: &http.Client{Timeout: 20 * time.Minute}}
	var err error
	if e.tmp, err = os.MkdirTemp("", "herald-bench-"); err != nil {
		return nil, err
	}
	logf("building herald, the receiver and the River worker in %s", e.tmp)
	e.herald = filepath.Join(e.tmp, "herald")
	e.riverBin = filepath.Join(e.tmp, "riverworker")
	for _, b := range []struct{ dir, out, pkg string }{
		{"..", e.herald, "./cmd/herald"},
		{".", e.riverBin, "./cmd/riverworker"},
		{".", filepath.Join(e.tmp, "receiver"), "./cmd/receiver"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			e.close()
			return nil, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	// Commit cost is part of what is measured: durable commits, as production.
	os.Setenv(pgtest.EnvFsync, "on")
	logf("starting PostgreSQL (fsync on)")
	if e.pg, err = pgtest.Start(); err != nil {
		e.close()
		return nil, err
	}
	if e.recv, err = startProc(e, "receiver", filepath.Join(e.tmp, "receiver"), []string{"-hosts", strconv.Itoa(receiverHosts)}, nil); err != nil {
		e.close()
		return nil, err
	}
	line, err := e.recv.readLine(10 * time.Second)
	if err != nil || !strings.HasPrefix(line, "listening ") {
		e.close()
		return nil, fmt.Errorf("receiver did not start (%q, %v); see %s", line, err, e.recv.log)
	}
	e.recvURL = strings.TrimPrefix(line, "listening ")
	if line, err = e.recv.readLine(10 * time.Second); err != nil || !strings.HasPrefix(line, "hosts ") {
		e.close()
		return nil, fmt.Errorf("receiver did not list its hosts (%q, %v); see %s", line, err, e.recv.log)
	}
	e.recvURLs = strings.Fields(strings.TrimPrefix(line, "hosts "))
	if err := e.facts(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.recv != nil {
		_ = e.recv.stop()
	}
	if e.pg != nil {
		_ = e.pg.Stop()
	}
	if e.keep {
		logf("kept %s", e.tmp)
	} else if e.tmp != "" {
		os.RemoveAll(e.tmp)
	}
}

// facts records the machine and the versions.
func (e *env) facts(ctx context.Context) error {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			mem = fmt.Sprintf("%.0f GiB", kb/(1<<20))
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	e.machine = fmt.Sprintf("%d CPUs (nproc), %s, %s RAM, Linux %s", runtime.NumCPU(), cpu, mem, kernel)
	e.goVersion = runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/riverqueue/river":
				e.riverVersion = d.Version
			case "github.com/jackc/pgx/v5":
				e.pgxVersion = d.Version
			}
		}
	}
	if out, err := exec.Command("git", "-C", "..", "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
		e.commit = strings.TrimSpace(string(out))
	}
	conn, err := pgx.Connect(ctx, e.pg.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, "SHOW server_version").Scan(&e.pgVersion)
}

// heraldDB creates the database name, fresh, with herald's schema, and
// returns its URL.
func (e *env) heraldDB(ctx context.Context, name string) (string, error) {
	dbURL, err := e.createDB(ctx, name)
	if err != nil {
		return "", err
	}
	_, err = postgres.MigrateUp(ctx, dbURL)
	return dbURL, err
}

// schemaOf takes the schema of the database at dbURL back to the newest one
// the herald binary bin knows (`bin migrate status --json`), one migration
// at a time with this tree's down migrations, so that an older binary
// (-herald-baseline) serves a database this tree made. The data stays: a
// down migration drops only what its up added.
func schemaOf(ctx context.Context, bin, dbURL string) error {
	out, err := exec.CommandContext(ctx, bin, "migrate", "status", "--json", "--database", dbURL).Output()
	var st struct {
		Current, Latest int
	}
	if jerr := json.Unmarshal(out, &st); jerr != nil || st.Latest < 1 {
		return fmt.Errorf("%s migrate status: %q (%v, %v)", bin, out, err, jerr)
	}
	for cur := st.Current; cur > st.Latest; cur-- {
		if _, err := postgres.MigrateDown(ctx, dbURL); err != nil {
			return fmt.Errorf("schema %d down for %s: %w", cur, bin, err)
		}
	}
	return nil
}

// createDB creates an empty database and returns its URL.
func (e *env) createDB(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, e.pg.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u, err := url.Parse(e.pg.URL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// dropDB drops a database (its disk is not needed after a run).
func (e *env) dropDB(ctx context.Context, name string) {
	conn, err := pgx.Connect(ctx, e.pg.URL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// snapshot is the write counters at one instant: the cluster's WAL position
// and the rows the database's tables saw inserted, updated and deleted.
type snapshot struct {
	lsn                string
	ins, upd, del, hot int64
	autovacuums        int64 // autovacuum and autoanalyze runs of the database's tables
	pgCPU              time.Duration
}

// snap waits until no other session is connected to the database (so that
// every backend that wrote has exited and flushed its statistics; at most
// 10 s), then reads the counters.
func (e *env) snap(ctx context.Context, dbURL, dbName string) (snapshot, error) {
	var s snapshot
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return s, err
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`, dbName).Scan(&n); err != nil {
			return s, err
		}
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return s, err
	}
	err = conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text,
coalesce(sum(n_tup_ins), 0)::bigint, coalesce(sum(n_tup_upd), 0)::bigint,
coalesce(sum(n_tup_del), 0)::bigint, coalesce(sum(n_tup_hot_upd), 0)::bigint,
coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint
FROM pg_stat_user_tables`).Scan(&s.lsn, &s.ins, &s.upd, &s.del, &s.hot, &s.autovacuums)
	s.pgCPU = e.pgCPU()
	return s, err
}

// delta is what was written between two snapshots.
type delta struct {
	wal                int64
	ins, upd, del, hot int64
	autovacuums        int64
	pgCPU              time.Duration
}

func (d delta) rows() int64 { return d.ins + d.upd + d.del }

func (e *env) diff(ctx context.Context, a, b snapshot) (delta, error) {
	conn, err := pgx.Connect(ctx, e.pg.URL)
	if err != nil {
		return delta{}, err
	}
	defer conn.Close(ctx)
	var d delta
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($2::text::pg_lsn, $1::text::pg_lsn)::bigint", a.lsn, b.lsn).Scan(&d.wal); err != nil {
		return d, err
	}
	d.ins, d.upd, d.del, d.hot = b.ins-a.ins, b.upd-a.upd, b.del-a.del, b.hot-a.hot
	d.autovacuums = b.autovacuums - a.autovacuums
	d.pgCPU = b.pgCPU - a.pgCPU
	return d, nil
}

// measure runs f between two snapshots of the database dbName (snap) and
// returns what was written in between.
func (e *env) measure(ctx context.Context, dbURL, dbName string, f func() error) (delta, error) {
	s0, err := e.snap(ctx, dbURL, dbName)
	if err != nil {
		return delta{}, err
	}
	if err := f(); err != nil {
		return delta{}, err
	}
	s1, err := e.snap(ctx, dbURL, dbName)
	if err != nil {
		return delta{}, err
	}
	return e.diff(ctx, s0, s1)
}

func (d delta) add(o delta) delta {
	return delta{wal: d.wal + o.wal, ins: d.ins + o.ins, upd: d.upd + o.upd, del: d.del + o.del, hot: d.hot + o.hot, pgCPU: d.pgCPU + o.pgCPU}
}

// pgCPU is the CPU time PostgreSQL has used: the postmaster and its exited
// children (cutime, cstime) plus its live children. 0 for an external
// server.
func (e *env) pgCPU() time.Duration {
	if e.pg.Dir() == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(e.pg.Dir(), "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	total := cpuOf(pid, true)
	entries, _ := os.ReadDir("/proc")
	for _, de := range entries {
		child, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			total += cpuOf(child, false)
		}
	}
	return total
}

// statFields returns /proc/pid/stat's fields after the command name
// (field 3, the state, is index 0).
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// clockTick is USER_HZ, the unit of /proc/pid/stat's times (100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuOf is a process's user + system CPU time (and its waited-for
// children's, with children).
func cpuOf(pid int, children bool) time.Duration {
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	n := 0
	idx := []int{11, 12} // utime, stime (fields 14, 15)
	if children {
		idx = append(idx, 13, 14) // cutime, cstime
	}
	for _, i := range idx {
		v, _ := strconv.Atoi(f[i])
		n += v
	}
	return time.Duration(n) * clockTick
}

// proc is a child process of the benchmark.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *bufio.Reader
	log  string
	in   io.WriteCloser
	done chan struct{}
	err  error
}

// startProc starts path with args; stdout is read by readLine, stderr goes
// to a log file in the temporary directory. The child gets SIGTERM if the
// benchmark dies.
func startProc(e *env, name, path string, args, extraEnv []string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(e.tmp, name+".log"), done: make(chan struct{})}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), extraEnv...)
	p.cmd.Stderr = logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		logFile.Close()
		return nil, err
	}
	p.out = bufio.NewReader(stdout)
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// readLine returns the next line the process prints on stdout.
func (p *proc) readLine(timeout time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := p.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(timeout):
		return "", fmt.Errorf("%s printed nothing in %v", p.name, timeout)
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func (p *proc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *proc) cpu() time.Duration { return cpuOf(p.pid(), false) }

// stop sends SIGTERM (and closes stdin) and waits up to a minute for the
// process to exit; an exit status other than 0 is an error.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within a minute of SIGTERM; see %s", p.name, p.log)
	}
	if p.err != nil {
		return fmt.Errorf("%s: %v; see %s", p.name, p.err, p.log)
	}
	return nil
}

// recvStats is the receiver's answer to /wait and /stats.
type recvStats struct {
	Count     int64 `json:"count"`
	Routes    int   `json:"routes"`
	FirstNS   int64 `json:"first_ns"`
	LastNS    int64 `json:"last_ns"`
	ReachedNS int64 `json:"reached_ns"`
	// MostInFlight is the most requests of the group the receiver held at
	// once (on /wait: up to the nth).
	MostInFlight int64 `json:"most_in_flight"`
}

func (e *env) recvGet(ctx context.Context, path string, q url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.recvURL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("receiver %s: %s %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// wait blocks until the receiver has n requests in group, or until the
// process p (if not nil) exits, or ctx ends.
func (e *env) wait(ctx context.Context, group string, n int64, p *proc) (recvStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p != nil {
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var st recvStats
	err := e.recvGet(ctx, "/wait", url.Values{"group": {group}, "n": {strconv.FormatInt(n, 10)}}, &st)
	if err != nil && p != nil {
		select {
		case <-p.done:
			return st, fmt.Errorf("%s exited before %d deliveries arrived (%v); see %s", p.name, n, p.err, p.log)
		default:
		}
	}
	return st, err
}

// routes checks that every route of group got exactly want requests and
// returns the requests beyond that (duplicates) and the routes short of it.
func (e *env) routes(ctx context.Context, group string, routes int, want int64) (dups, short int64, err error) {
	m := map[string]int64{}
	if err := e.recvGet(ctx, "/routes", url.Values{"group": {group}}, &m); err != nil {
		return 0, 0, err
	}
	short = int64(routes - len(m))
	for _, n := range m {
		switch {
		case n > want:
			dups += n - want
		case n < want:
			short++
		}
	}
	return dups, short, nil
}

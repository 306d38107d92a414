package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/bintest"
)

// cli runs the herald binary against one database, as an operator would,
// and keeps everything it printed in a transcript.
type cli struct {
	t   testing.TB
	bin string
	db  string
	dir string // working directory
	env []string
	tr  *transcript
}

type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("herald %s\nexit %d\nstdout: %s\nstderr: %s", quoteArgs(r.args), r.code, cutString(r.stdout, 2000), cutString(r.stderr, 2000))
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = cutString(fmt.Sprintf("%q", a), 120)
	}
	return strings.Join(q, " ")
}

func cutString(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// run runs herald with args (after --database) and stdin; it fails the
// test only if the binary could not be run at all.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	full := append([]string{"--database", c.db}, args...)
	cmd := exec.Command(c.bin, full...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	stdout, stderr, code := bintest.Run(c.t, cmd, stdin)
	c.tr.add("herald "+quoteArgs(args), []byte(stdout), []byte(stderr))
	return result{args: args, stdout: stdout, stderr: stderr, code: code}
}

// ok runs a command that must exit 0 and returns its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 0 {
		c.t.Fatalf("want exit 0:\n%s", r)
	}
	return r.stdout
}

// json runs a command with --json that must exit 0 and decodes its output.
func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("herald %s --json printed what does not decode: %v\n%s", quoteArgs(args), err, cutString(out, 2000))
	}
}

// proc is one herald process kept running (a daemon), its output written
// to a log file and watched line by line.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *lineLog
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// start starts herald with args (after --database) as a long-running
// process whose stdout and stderr go to logPath (appended: a slot's
// incarnations share one file).
func (c *cli) start(name, logPath string, args ...string) *proc {
	c.t.Helper()
	full := append([]string{"--database", c.db}, args...)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatalf("open %s: %v", logPath, err)
	}
	c.tr.addFile(logPath)
	ll := &lineLog{file: f, changed: make(chan struct{})}
	cmd := exec.Command(c.bin, full...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout, cmd.Stderr = ll, ll
	if err := cmd.Start(); err != nil {
		f.Close()
		c.t.Fatalf("start herald %s: %v", quoteArgs(args), err)
	}
	fmt.Fprintf(f, "=== %s: pid %d: herald %s\n", name, cmd.Process.Pid, quoteArgs(full))
	p := &proc{name: name, cmd: cmd, out: ll, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		ll.close()
		close(p.exited)
	}()
	c.t.Cleanup(func() {
		if !p.done() {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits up to limit for the process to exit; it
// returns its exit code, or an error if it did not exit in time.
func (p *proc) stop(limit time.Duration) (int, error) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(limit):
		p.kill()
		return -1, fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM", p.name, p.pid(), limit)
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

// lineLog is a process's output: written to a file and kept line by line
// so that the harness can wait for a line.
type lineLog struct {
	mu      sync.Mutex
	file    *os.File
	partial []byte
	lines   []string
	closed  bool
	changed chan struct{}
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.file.Write(b)
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return len(b), nil
}

func (l *lineLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.lines = append(l.lines, string(l.partial))
		l.partial = nil
	}
	l.closed = true
	_ = l.file.Close()
	close(l.changed)
	l.changed = make(chan struct{})
}

// count returns how many lines contain every one of words.
func (l *lineLog) count(words ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if containsAll(line, words) {
			n++
		}
	}
	return n
}

// text returns the output so far.
func (l *lineLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitLine waits until a line containing every one of words was written,
// the process exited, ctx ended or limit passed, and returns the line.
func (l *lineLog) waitLine(ctx context.Context, limit time.Duration, words ...string) (string, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if containsAll(line, words) {
				l.mu.Unlock()
				return line, nil
			}
		}
		ch, closed := l.changed, l.closed
		l.mu.Unlock()
		if closed {
			return "", fmt.Errorf("the process exited without logging a line with %q", words)
		}
		select {
		case <-ch:
		case <-timer.C:
			return "", fmt.Errorf("no line with %q within %v", words, limit)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// transcript keeps everything the harness's herald processes printed: the
// output of every command and the log files of the daemons, for the
// search for secrets.
type transcript struct {
	mu     sync.Mutex
	chunks []chunk
	files  []string
}

type chunk struct {
	what string
	data []byte
}

func (tr *transcript) add(what string, parts ...[]byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range parts {
		tr.chunks = append(tr.chunks, chunk{what: what, data: bytes.Clone(p)})
	}
}

func (tr *transcript) addFile(path string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, f := range tr.files {
		if f == path {
			return
		}
	}
	tr.files = append(tr.files, path)
}

// leaks searches everything for each secret and returns where each was
// found, and how many bytes were searched. It looks up every window of
// leakProbe bytes in a set of the secrets' prefixes, so that thousands of
// secrets cost one pass over the logs, not one pass each.
func (tr *transcript) leaks(secrets []string) (found []string, searched int, err error) {
	tr.mu.Lock()
	chunks := append([]chunk(nil), tr.chunks...)
	files := append([]string(nil), tr.files...)
	tr.mu.Unlock()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		chunks = append(chunks, chunk{what: "log " + filepath.Base(f), data: data})
	}
	byPrefix := map[string][]string{}
	for _, s := range secrets {
		if len(s) < leakProbe {
			return nil, 0, fmt.Errorf("a secret of %d bytes is too short to search for (at least %d)", len(s), leakProbe)
		}
		byPrefix[s[:leakProbe]] = append(byPrefix[s[:leakProbe]], s)
	}
	for _, c := range chunks {
		searched += len(c.data)
		for i := 0; i+leakProbe <= len(c.data); i++ {
			for _, s := range byPrefix[string(c.data[i:i+leakProbe])] {
				if bytes.HasPrefix(c.data[i:], []byte(s)) {
					found = append(found, fmt.Sprintf("%s: a secret (%d bytes, starting %q) is at byte %d", c.what, len(s), s[:8], i))
				}
			}
		}
	}
	return found, searched, nil
}

// leakProbe is the length of the secrets' prefixes leaks looks up.
const leakProbe = 12

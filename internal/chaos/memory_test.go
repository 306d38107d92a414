package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDaemonMemoryIsBoundedByPageBytes: `herald run` with its defaults
// (plus --allow-http and --allow-private-network, listeners off) on SQLite
// delivers a backlog of 64 records of 1 MB on each of 4 streams (16 in
// long mode) to one fast loopback receiver, every record once, with a peak
// resident memory (VmHWM) under 200 MiB: a turn reads a page of at most
// --page-bytes, where it read 256 records whatever their size (354-372 MiB
// for 4 streams, 457-507 MiB for 16).
func TestDaemonMemoryIsBoundedByPageBytes(t *testing.T) {
	const records, size, most = 64, 1_000_000, 200 << 20
	s := newScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	streams := 4
	if s.mode.Name == "long" {
		streams = 16
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		done = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil || n < size {
			http.Error(w, fmt.Sprintf("a body of %d bytes (%v)", n, err), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[r.Header.Get("webhook-id")]++
		if len(seen) == streams*records {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	s.cli.ok("migrate", "up")
	file := filepath.Join(s.dir, "records.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	payload := `"` + strings.Repeat("herald ", size/7+1)[:size-2] + `"` // a JSON string of size bytes
	for st := range streams {
		stream := fmt.Sprintf("big/%d", st)
		s.cli.ok("register", "--stream", stream, "--id", "r", "--namespace", "webhook", "--url", srv.URL+"/"+strconv.Itoa(st),
			"--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		for i := range records {
			fmt.Fprintf(w, `{"stream":%q,"id":"%s#%d","kind":"blob","payload":%s}`+"\n", stream, stream, i+1, payload)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s.cli.ok("append", "--file", file)

	p := s.cli.start("daemon", filepath.Join(s.dir, "daemon.log"), "run", "--allow-http", "--allow-private-network",
		"--metrics-addr", "", "--admin-addr", "")
	select {
	case <-done:
	case <-p.exited:
		t.Fatalf("the daemon exited: %v", p.err)
	case <-time.After(5 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d records delivered in 5 minutes", len(seen), streams*records)
	}
	hwm := vmHWM(t, p.pid())
	if _, err := p.stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	t.Logf("%d streams × %d records of %d bytes: peak resident %.1f MiB", streams, records, size, float64(hwm)/(1<<20))
	if hwm >= most {
		t.Errorf("peak resident memory %.1f MiB, not under %d MiB", float64(hwm)/(1<<20), most>>20)
	}
}

// vmHWM returns a process's peak resident set size in bytes.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("cannot read the daemon's peak resident set size from /proc (Linux): %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("VmHWM: %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

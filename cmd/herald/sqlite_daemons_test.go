package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two daemons on one SQLite file, as the README says is supported: every
// record reaches its receiver once and in order, while both sweep the same
// registrations (leases fence them, as on PostgreSQL), and both stop cleanly.
func TestTwoDaemonsShareOneSQLiteFile(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "herald.db")
	h := newHerald(t, db)
	recv := newReceiver(t)
	const streams, perStream = 4, 15
	for i := range streams {
		h.ok("register", "--stream", fmt.Sprintf("orders/%d", i), "--id", "r", "--namespace", "webhook",
			"--url", fmt.Sprintf("%s/r%d", recv.URL, i), "--secret", secret)
	}

	var logs [2]bytes.Buffer
	var daemons [2]*exec.Cmd
	var exited [2]chan error
	for i := range daemons {
		exited[i] = make(chan error, 1)
		d := exec.Command(bin, append([]string{"--database", db, "run", "--every", "50ms", "--metrics-addr", "", "--admin-addr", ""}, allow...)...)
		d.Dir, d.Stdout, d.Stderr = h.dir, &logs[i], &logs[i]
		require.NoError(t, d.Start())
		daemons[i] = d
		go func() { exited[i] <- d.Wait() }()
	}
	defer func() {
		for _, d := range daemons {
			if d.ProcessState == nil {
				_ = d.Process.Kill()
			}
		}
	}()

	var lines strings.Builder
	for n := range perStream {
		for i := range streams {
			fmt.Fprintf(&lines, `{"stream":"orders/%d","id":"o-%d-%d","kind":"order.created","payload":{"n":%d}}`+"\n", i, i, n, n)
		}
	}
	file := filepath.Join(h.dir, "records.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o600))
	h.ok("append", "--file", file)

	for got := 0; got < streams*perStream; got++ {
		select {
		case <-recv.arrived:
		case <-time.After(60 * time.Second):
			for _, d := range daemons {
				_ = d.Process.Kill()
			}
			for i := range exited {
				<-exited[i]
			}
			t.Fatalf("%d of %d delivered; logs:\n%s\n---\n%s", got, streams*perStream, logs[0].String(), logs[1].String())
		}
	}
	for _, d := range daemons {
		require.NoError(t, d.Process.Signal(syscall.SIGTERM))
	}
	var errs [2]error
	for i := range daemons {
		select {
		case errs[i] = <-exited[i]:
		case <-time.After(30 * time.Second):
			t.Fatalf("daemon %d did not stop on SIGTERM", i)
		}
	}
	// Both have exited: their logs are written.
	for i, err := range errs {
		require.NoError(t, err, "daemon %d: exit 0 on SIGTERM; logs:\n%s", i, logs[i].String())
	}
	for i := range streams {
		var want []string
		for n := range perStream {
			want = append(want, fmt.Sprintf(`{"n":%d}`, n))
		}
		require.Equal(t, want, recv.bodies(fmt.Sprintf("/r%d", i)), "orders/%d: each record once, in order", i)
	}
	for i := range logs {
		require.NotContains(t, logs[i].String(), "level=ERROR", "daemon %d logged an error", i)
	}
}

// Command herald is the operator's tool and daemon for herald, the durable
// push engine: migrate, append, register, sweep, run, and list, unpark, skip
// and rewind registrations. `herald --help` lists the commands; `herald demo`
// shows the whole job on loopback receivers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/heraldpush/herald/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := cpuProfile(os.Getenv("HERALD_CPUPROFILE"))
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stopProfile()
	stop()
	os.Exit(code)
}

// cpuProfile is a developer's aid, not an operator's option: with
// HERALD_CPUPROFILE set, the process writes a CPU profile (runtime/pprof,
// for `go tool pprof`) of its whole life to that path followed by "." and
// its pid, so that several processes of one benchmark do not overwrite each
// other's. A profile that cannot be started is reported and skipped.
func cpuProfile(prefix string) (stop func()) {
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "herald: HERALD_CPUPROFILE: %v (no profile written)\n", err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

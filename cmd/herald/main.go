// Command herald is the operator's tool and daemon for herald, the durable
// push engine: migrate, append, register, sweep, run, and list, unpark, skip
// and rewind registrations. `herald --help` lists the commands; `herald demo`
// shows the whole job on loopback receivers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/heraldpush/herald/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}

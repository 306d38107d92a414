package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/transport"
)

// transportFlags are the safety and timing options of sweep, run and demo.
type transportFlags struct {
	allowHTTP, allowPrivate bool
	allowHosts              []string
	timeout                 time.Duration
	cmd                     *cobra.Command // the command, for --max-per-host (workerFlags) when it has one
}

func (t *transportFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	t.cmd = cmd
	f.BoolVar(&t.allowHTTP, "allow-http", false, "allow plain http:// URLs (off: https only)")
	f.BoolVar(&t.allowPrivate, "allow-private-network", false, "allow loopback and private addresses (off: they are refused at connect time, against SSRF)")
	f.StringArrayVar(&t.allowHosts, "allow-host", nil, "only deliver to this host or *.suffix (repeatable; default: any public host)")
	f.DurationVar(&t.timeout, "timeout", transport.DefaultTimeout, fmt.Sprintf("per-request timeout, covering connect, TLS, headers and body (0: %v)", transport.DefaultTimeout))
}

func (t *transportFlags) build(e *env) (*transport.HTTP, error) {
	tr, err := transport.New(transport.Options{Timeout: t.timeout, AllowHTTP: t.allowHTTP,
		AllowPrivateNetwork: t.allowPrivate, AllowHosts: t.allowHosts, Logger: e.logger, MaxIdleConnsPerHost: t.idlePerHost()})
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // past "transport: new: ", which names nothing the user typed
		}
		return nil, usageError{asFlags(err)}
	}
	return tr, nil
}

// idlePerHost is the keep-alive connections the transport keeps per host:
// as many as the worker may have in flight to one host (--max-per-host),
// and at least the transport's default, so that a connection is never
// closed after its answer only because the pool is smaller than what the
// worker sends to that host at once (each would cost a new connection:
// a dial, and on https a handshake).
func (t *transportFlags) idlePerHost() int {
	n := transport.DefaultMaxIdleConnsPerHost
	if t.cmd != nil {
		if v, err := t.cmd.Flags().GetInt("max-per-host"); err == nil {
			n = max(n, v)
		}
	}
	return min(n, transport.MaxIdleConnsPerHostLimit)
}

package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/transport"
)

// transportFlags are the safety and timing options of sweep, run and demo.
type transportFlags struct {
	allowHTTP, allowPrivate bool
	allowHosts              []string
	timeout                 time.Duration
}

func (t *transportFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&t.allowHTTP, "allow-http", false, "allow plain http:// URLs (off: https only)")
	f.BoolVar(&t.allowPrivate, "allow-private-network", false, "allow loopback and private addresses (off: they are refused at connect time, against SSRF)")
	f.StringArrayVar(&t.allowHosts, "allow-host", nil, "only deliver to this host or *.suffix (repeatable; default: any public host)")
	f.DurationVar(&t.timeout, "timeout", transport.DefaultTimeout, "per-request timeout, covering connect, TLS, headers and body")
}

func (t *transportFlags) build(e *env) (*transport.HTTP, error) {
	tr, err := transport.New(transport.Options{Timeout: t.timeout, AllowHTTP: t.allowHTTP,
		AllowPrivateNetwork: t.allowPrivate, AllowHosts: t.allowHosts, Logger: e.logger})
	if err != nil {
		return nil, usageError{err}
	}
	return tr, nil
}

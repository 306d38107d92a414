package cli

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

func newHosts(e *env) *cobra.Command {
	var q push.HostQuery
	return e.cobra(command{
		use:   "hosts",
		short: "Host health: which receivers' hosts are down or unavailable, and what they hold",
		long: `List the hosts herald keeps health for: every host with a failure that
says nothing about the record (no connection, a timeout, a TLS failure, a
reset, or a gateway's 502/503/504 without Retry-After). After 3 such failures in a row a host is down:
its registrations are held (not attempted, not charged attempts, never parked)
and one of them probes it once per backoff window; any answer brings it up and
releases them all. Down longer than --host-horizon (herald run, default 7 days)
it is unavailable and probed hourly. README, "Hosts", says it all.

Columns: the host (host:port), its state and since when, consecutive
host-level failures, the next probe, the registrations held, and the last
error (a receiver's text, shown escaped).`,
		example: `  herald hosts
  herald hosts --state down --json
  herald hosts reset social.example:443`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&q.State, "state", "", "only hosts in this state: up, down or unavailable")
		},
		check: func(*call) error {
			if _, err := q.Validate(); err != nil {
				return usagef("--state %q must be up, down or unavailable", q.State)
			}
			return nil
		},
		run: func(c *call) error {
			hs, err := push.AllHosts(c.ctx(), c.b, q)
			if err != nil {
				return err
			}
			if hs == nil {
				hs = []push.Host{}
			}
			return c.print(hs, func() error {
				switch {
				case len(hs) == 0 && q.State != "":
					fmt.Fprintf(e.Out, "No host is %s.\n", q.State)
				case len(hs) == 0:
					fmt.Fprintln(e.Out, "No host has failed: herald keeps health only for hosts that have.")
				default:
					t := tbl.New(e.Out, "HOST", "STATE", "SINCE", "FAILURES", "NEXT PROBE", "HELD", "LAST ERROR")
					for _, h := range hs {
						t.Row(h.Host, h.State, operator.Instant(h.Since), fmt.Sprint(h.Failures), operator.Instant(h.NextProbeAt), fmt.Sprint(h.Held), h.LastError)
					}
					return t.Flush()
				}
				return nil
			})
		},
		subcommands: []*cobra.Command{newHostsReset(e)},
	})
}

func newHostsReset(e *env) *cobra.Command {
	var (
		at   instant
		host string
	)
	return e.cobra(command{
		use:   "reset HOST",
		short: "Bring a host up and release every registration held for it",
		long: `Reset a host as if it had answered: up, its failures forgotten, its held
registrations due again (each at its own next attempt). HOST is the host:port
that herald hosts lists, or any URL on that host. Nothing was lost while it was
held. If the host is still down, the next failures bring it down again.`,
		example: `  herald hosts reset social.example:443
  herald hosts reset https://social.example/inbox --json`,
		args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && args[0] == "":
				return usagef("hosts reset: HOST is empty; give host:port, as herald hosts lists it")
			case len(args) != 1:
				return usagef("hosts reset takes one HOST (host:port, as herald hosts lists it), not %d", len(args))
			}
			return nil
		},
		db:    readDB,
		flags: func(f *pflag.FlagSet) { atFlag(f, &at) },
		check: func(c *call) error {
			host = operator.HostArg(c.args[0])
			return usageOf(push.ValidateHost(host))
		},
		run: func(c *call) error {
			before, err := push.AllHosts(c.ctx(), c.b, push.HostQuery{Host: host})
			if err != nil {
				return err
			}
			h, err := c.b.ResetHost(c.ctx(), host, c.at(at))
			if _, _, perr := net.SplitHostPort(host); perr != nil && errors.Is(err, journal.ErrNotFound) {
				return fmt.Errorf("%w: a host is host:port, as herald hosts lists it (%s for https)", err, journal.Shown(net.JoinHostPort(host, "443")))
			} else if err != nil {
				return fmt.Errorf("%w (%s lists the hosts herald knows)", err, e.hint("hosts"))
			}
			held := 0
			if len(before) == 1 {
				held = before[0].Held
			}
			return c.print(map[string]any{"released": held, "host": h}, func() error {
				if len(before) == 1 && before[0].State == push.HostUp && before[0].Failures == 0 {
					fmt.Fprintf(e.Out, "%s was up with no failures; nothing changed.\n", tbl.Cell(h.Host))
					return nil
				}
				fmt.Fprintf(e.Out, "Reset %s: up since %s; %s released.\n", tbl.Cell(h.Host), operator.Instant(h.Since), plural(held, "held registration"))
				return nil
			})
		},
	})
}

package cli

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

func hostArg(s string) string { return operator.HostArg(s) }

func newHosts(e *env) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "Host health: which receivers' hosts are down or unavailable, and what they hold",
		Long: `List the hosts herald keeps health for: every host with a failure that
says nothing about the record (no connection, a timeout, a TLS failure, a
reset, or a gateway's 502/503/504 without Retry-After). After 3 such failures in a row a host is down:
its registrations are held (not attempted, not charged attempts, never parked)
and one of them probes it once per backoff window; any answer brings it up and
releases them all. Down longer than --host-horizon (herald run, default 7 days)
it is unavailable and probed hourly. README, "Hosts", says it all.

Columns: the host (host:port), its state and since when, consecutive
host-level failures, the next probe, the registrations held, and the last
error (a receiver's text, shown escaped).`,
		Example: `  herald hosts
  herald hosts --state down --json
  herald hosts reset social.example:443`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := push.HostQuery{State: state}
			if _, err := q.Validate(); err != nil {
				return usagef("--state %q must be up, down or unavailable", state)
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			hs, err := push.AllHosts(cmd.Context(), b, q)
			if err != nil {
				return err
			}
			if e.json {
				if hs == nil {
					hs = []push.Host{}
				}
				return printJSON(e.Out, hs)
			}
			if len(hs) == 0 {
				if state != "" {
					fmt.Fprintf(e.Out, "No host is %s.\n", state)
				} else {
					fmt.Fprintln(e.Out, "No host has failed: herald keeps health only for hosts that have.")
				}
				return nil
			}
			t := newTable(e.Out, "HOST", "STATE", "SINCE", "FAILURES", "NEXT PROBE", "HELD", "LAST ERROR")
			for _, h := range hs {
				t.row(h.Host, h.State, fmtTime(h.Since), fmt.Sprint(h.Failures), fmtTime(h.NextProbeAt), fmt.Sprint(h.Held), h.LastError)
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only hosts in this state: up, down or unavailable")
	cmd.AddCommand(newHostsReset(e))
	return cmd
}

func newHostsReset(e *env) *cobra.Command {
	var k key
	cmd := &cobra.Command{
		Use:   "reset HOST",
		Short: "Bring a host up and release every registration held for it",
		Long: `Reset a host as if it had answered: up, its failures forgotten, its held
registrations due again (each at its own next attempt). HOST is the host:port
that herald hosts lists, or any URL on that host. Nothing was lost while it was
held. If the host is still down, the next failures bring it down again.`,
		Example: `  herald hosts reset social.example:443
  herald hosts reset https://social.example/inbox --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && args[0] == "":
				return usagef("hosts reset: HOST is empty; give host:port, as herald hosts lists it")
			case len(args) != 1:
				return usagef("hosts reset takes one HOST (host:port, as herald hosts lists it), not %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := k.instant(e)
			if err != nil {
				return err
			}
			host := hostArg(args[0])
			if err := push.ValidateHost(host); err != nil {
				return usageError{err}
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			before, err := push.AllHosts(cmd.Context(), b, push.HostQuery{Host: host})
			if err != nil {
				return err
			}
			h, err := b.ResetHost(cmd.Context(), host, at)
			if err != nil {
				if _, _, perr := net.SplitHostPort(host); perr != nil && errors.Is(err, journal.ErrNotFound) {
					return fmt.Errorf("%w: a host is host:port, as herald hosts lists it (%s for https)", err, journal.Shown(net.JoinHostPort(host, "443")))
				}
				return fmt.Errorf("%w (%s lists the hosts herald knows)", err, e.command("hosts"))
			}
			held := 0
			if len(before) == 1 {
				held = before[0].Held
			}
			if e.json {
				return printJSON(e.Out, map[string]any{"released": held, "host": h})
			}
			if len(before) == 1 && before[0].State == push.HostUp && before[0].Failures == 0 {
				fmt.Fprintf(e.Out, "%s was up with no failures; nothing changed.\n", cell(h.Host))
				return nil
			}
			fmt.Fprintf(e.Out, "Reset %s: up since %s; %s released.\n", cell(h.Host), fmtTime(h.Since), plural(held, "held registration"))
			return nil
		},
	}
	k.atFlag(cmd)
	return cmd
}

package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
)

func newRegistrations(e *env) *cobra.Command {
	var (
		q     push.ListQuery
		limit int
	)
	return e.cobra(command{
		use:   "registrations",
		short: "List registrations: cursor, head, lag, attempts, state, last error",
		long: `List registrations with where they stand: cursor (the first seq not yet
acknowledged), the stream's head, lag (records not yet acknowledged), attempts
at the cursor, next attempt ("parked" for a parked one: none until it is
unparked), state (ready, retrying, idle, parked, or held: host down or
unavailable, see herald hosts) and the last error. Ordered by stream, then id.

It lists at most --limit; when more follow, it says so with the command that
lists the next ones (--after-stream and --after-id: the last one listed). With
--json the list is the array alone: when it holds --limit registrations, ask
again after its last one.`,
		example: `  herald registrations --parked
  herald registrations --stream actor/alice --json
  herald registrations --namespace webhook --lagging --limit 1000
  herald registrations --after-stream actor/alice --after-id https://remote.example/inbox`,
		db: readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&q.Stream, "stream", "", "only this stream")
			f.StringVar(&q.Namespace, "namespace", "", "only this namespace (activitypub, cloudevents, a2a, webhook)")
			f.BoolVar(&q.Parked, "parked", false, "only parked registrations")
			f.BoolVar(&q.Lagging, "lagging", false, "only registrations with records not yet acknowledged")
			intVar(f, &limit, "limit", 1000, "at most this many rows", fmt.Sprintf("from 1 to %d", push.MaxListLimit*100), 1, push.MaxListLimit*100)
			f.StringVar(&q.After.Stream, "after-stream", "", "list the registrations after this one (with --after-id): the stream of the last one listed")
			f.StringVar(&q.After.ID, "after-id", "", "list the registrations after this one (with --after-stream): the id of the last one listed")
		},
		check: func(c *call) error {
			if q.Namespace != "" {
				if err := checkNamespace(q.Namespace); err != nil {
					return err
				}
			}
			if err := operator.CheckList(q); err != nil {
				return usageError{err}
			}
			if (q.After.Stream == "") != (q.After.ID == "") {
				return usagef("--after-stream and --after-id go together: the stream and id of the last registration listed")
			}
			return nil
		},
		run: func(c *call) error {
			var all []push.Status
			for len(all) < limit {
				q.Limit = min(limit-len(all), push.MaxListLimit)
				page, err := c.b.List(c.ctx(), q)
				if err != nil {
					return err
				}
				all = append(all, page...)
				if len(page) < q.Limit {
					break
				}
				q.After = page[len(page)-1].Key()
			}
			more := false
			if len(all) == limit {
				probe := q
				probe.Limit, probe.After = 1, all[len(all)-1].Key()
				next, err := c.b.List(c.ctx(), probe)
				if err != nil {
					return err
				}
				more = len(next) > 0
			}
			held, err := operator.HeldHosts(c.ctx(), c.b)
			if err != nil {
				return err
			}
			return c.print(held.Views(all), func() error {
				if err := printRegistrations(e.Out, held.Views(all)); err != nil || !more {
					return err
				}
				last := all[len(all)-1].Key()
				words := []string{e.hint("registrations")}
				for _, f := range [][2]string{{"--stream", q.Stream}, {"--namespace", q.Namespace}} {
					if f[1] != "" {
						words = append(words, f[0], shellQuote(f[1]))
					}
				}
				if q.Parked {
					words = append(words, "--parked")
				}
				if q.Lagging {
					words = append(words, "--lagging")
				}
				words = append(words, "--limit", fmt.Sprint(limit), "--after-stream", shellQuote(last.Stream), "--after-id", shellQuote(last.ID))
				_, err := fmt.Fprintf(e.Out, "More registrations follow: %s\n", strings.Join(words, " "))
				return err
			})
		},
	})
}

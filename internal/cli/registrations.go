package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/push"
)

func newRegistrations(e *env) *cobra.Command {
	var (
		q     push.ListQuery
		limit int
	)
	cmd := &cobra.Command{
		Use:   "registrations",
		Short: "List registrations: cursor, head, lag, attempts, state, last error",
		Long: `List registrations with where they stand: cursor (the first seq not yet
acknowledged), the stream's head, lag (records not yet acknowledged), attempts
at the cursor, next attempt ("parked" for a parked one: none until it is
unparked), state (ready, retrying, idle, parked, or held: host down or
unavailable, see herald hosts) and the last error. Ordered by stream, then id.`,
		Example: `  herald registrations --parked
  herald registrations --stream actor/alice --json
  herald registrations --namespace webhook --lagging --limit 1000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if q.Namespace != "" {
				if err := checkNamespace(q.Namespace); err != nil {
					return err
				}
			}
			if limit < 1 || limit > push.MaxListLimit*100 {
				return usagef("--limit %d must be from 1 to %d", limit, push.MaxListLimit*100)
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			var all []push.Status
			for len(all) < limit {
				q.Limit = min(limit-len(all), push.MaxListLimit)
				page, err := b.List(cmd.Context(), q)
				if err != nil {
					return err
				}
				all = append(all, page...)
				if len(page) < q.Limit {
					break
				}
				q.After = page[len(page)-1].Key()
			}
			held, err := notUpHosts(cmd.Context(), b)
			if err != nil {
				return err
			}
			return printRegistrations(e.Out, e.json, all, held)
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Stream, "stream", "", "only this stream")
	f.StringVar(&q.Namespace, "namespace", "", "only this namespace (activitypub, cloudevents, a2a, webhook)")
	f.BoolVar(&q.Parked, "parked", false, "only parked registrations")
	f.BoolVar(&q.Lagging, "lagging", false, "only registrations with records not yet acknowledged")
	f.IntVar(&limit, "limit", 1000, "at most this many rows")
	intRange(cmd, "limit", fmt.Sprintf("from 1 to %d", push.MaxListLimit*100))
	return cmd
}

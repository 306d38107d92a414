package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
)

func newUnregister(e *env) *cobra.Command {
	var k key
	cmd := &cobra.Command{
		Use:   "unregister",
		Short: "Remove a registration and its evidence; the journal keeps every record",
		Long: `Remove a registration: its receiver gets nothing more, and its cursor, retry
state and evidence are deleted. The journal is not touched. It prints the
cursor it had, so that register --from-seq can bring it back where it was.`,
		Example: `  herald unregister --stream orders/1001 --id billing`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "stream", "id"); err != nil {
				return err
			}
			b, err := e.openExisting(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			before, err := b.Get(cmd.Context(), k.stream, k.id)
			if err != nil {
				return k.notFound(e, err)
			}
			if err := b.Unregister(cmd.Context(), k.stream, k.id); err != nil {
				return err
			}
			if e.json {
				return printJSON(e.Out, map[string]any{"unregistered": operator.Held(nil).View(before)})
			}
			fmt.Fprintf(e.Out, "Unregistered %s (%s to %s) at cursor %d, with %s not delivered; its evidence is deleted.\n",
				push.Name(k.stream, k.id), before.Namespace, before.Host(), before.NextSeq, plural(int(before.Lag()), "record"))
			// The command that registers it again as it was: its URL
			// unless that holds what redactURL hides (a query, which may
			// be a capability), its policy, kinds and window; the config
			// is never shown (secrets), so its flags are named to fill in.
			again := []string{e.command("register"), "--stream", shellQuote(k.stream), "--id", shellQuote(k.id), "--namespace", before.Namespace}
			if u := before.URL; operator.RedactURL(u) == u {
				again = append(again, "--url", shellQuote(u))
			} else {
				again = append(again, "--url", "…")
			}
			if before.OnRejected != "" {
				again = append(again, "--on-4xx", shellQuote(string(before.OnRejected)))
			}
			if len(before.Kinds) > 0 {
				again = append(again, "--kinds", shellQuote(strings.Join(before.Kinds, ",")))
			}
			if before.Window > 1 {
				again = append(again, "--window", fmt.Sprint(before.Window))
			}
			again = append(again, "--from-seq", fmt.Sprint(before.NextSeq))
			var opts []string
			for _, f := range namespaces[before.Namespace].flags {
				opts = append(opts, "--"+f)
			}
			with := ""
			if len(opts) > 0 {
				with = fmt.Sprintf(", with its %s as registered", strings.Join(opts, ", "))
			}
			fmt.Fprintf(e.Out, "To bring it back there: %s%s\n", strings.Join(again, " "), with)
			return nil
		},
	}
	k.flags(cmd)
	return cmd
}

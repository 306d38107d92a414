package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
				return printJSON(e.Out, map[string]any{"unregistered": viewOf(before)})
			}
			fmt.Fprintf(e.Out, "Unregistered %s (%s to %s) at cursor %d, with %s not delivered; its evidence is deleted.\n",
				regName(k.stream, k.id), before.Namespace, before.Host(), before.NextSeq, plural(int(before.Lag()), "record"))
			// The URL and the config are not shown (they may hold
			// secrets): the operator fills them in.
			var opts []string
			for _, f := range namespaces[before.Namespace].flags {
				opts = append(opts, "--"+f)
			}
			with := ""
			if len(opts) > 0 {
				with = fmt.Sprintf(", with its %s as registered", strings.Join(opts, ", "))
			}
			fmt.Fprintf(e.Out, "To bring it back there: %s --stream %s --id %s --namespace %s --url … --from-seq %d%s\n",
				e.command("register"), shellQuote(k.stream), shellQuote(k.id), before.Namespace, before.NextSeq, with)
			return nil
		},
	}
	k.flags(cmd)
	return cmd
}

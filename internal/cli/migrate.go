package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/sqlite"
)

func newMigrate(e *env) *cobra.Command {
	var yes bool
	return e.cobra(command{
		use:   "migrate up|down|status",
		short: "Apply, revert or show the database schema's migrations",
		long: `Manage the database schema. "up" applies every pending migration; "down"
reverts the newest one (it drops what that migration created: data in those
tables is lost), so it asks first on a terminal and otherwise needs --yes;
"status" lists the migrations and which are applied.

A new SQLite file is migrated automatically on first use; PostgreSQL is
migrated only by "herald migrate up", so that a deploy controls when it happens.`,
		example: `  herald migrate up --database postgres://herald@localhost/herald
  herald migrate status --json
  herald migrate down --yes --database sqlite:./herald.db`,
		args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "up" && args[0] != "down" && args[0] != "status") {
				return usagef("migrate takes one of up, down, status")
			}
			return nil
		},
		flags: func(f *pflag.FlagSet) {
			f.BoolVar(&yes, "yes", false, "down: revert without asking (it drops the newest migration's tables and their data)")
		},
		run: func(c *call) error {
			d, err := parseDatabase(e.databaseFrom, e.database)
			if err != nil {
				return err
			}
			if c.args[0] == "down" && !yes {
				if err := e.confirmDown(c.ctx(), d); err != nil {
					return err
				}
			}
			st, err := migrate(c.ctx(), d, c.args[0])
			if err != nil {
				return fmt.Errorf("migrate %s %s: %w", c.args[0], d, err)
			}
			return c.print(st, func() error {
				fmt.Fprintf(e.Out, "%s: schema version %d of %d.\n", st.Database, st.Current, st.Latest)
				t := tbl.New(e.Out, "VERSION", "NAME", "APPLIED")
				for _, m := range st.Migrations {
					t.Row(fmt.Sprint(m.Version), m.Name, yesNo(m.Applied))
				}
				return t.Flush()
			})
		},
	})
}

// confirmDown asks on a terminal before migrate down drops data, and
// without a terminal refuses unless --yes was given (exit 2, nothing done).
func (e *env) confirmDown(ctx context.Context, d database) error {
	st, err := migrate(ctx, d, "status")
	if err != nil {
		return fmt.Errorf("migrate down %s: %w", d, err)
	}
	if st.Current == 0 {
		return nil // nothing to revert: down changes nothing
	}
	name := fmt.Sprint(st.Current)
	for _, m := range st.Migrations {
		if m.Version == st.Current {
			name = fmt.Sprintf("%d (%s)", m.Version, m.Name)
		}
	}
	in, ok := e.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return usagef("migrate down reverts migration %s of %s and drops what it created, data included: add --yes to do it", name, d)
	}
	fmt.Fprintf(e.Err, "migrate down reverts migration %s of %s and drops what it created, data included. Type yes to go on: ", name, d)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return usagef("migrate down: not confirmed; nothing was changed")
	}
	return nil
}

// migrate runs verb (up, down or status) on d's store. The status names the
// database as d.String() does, the form every other command prints.
func migrate(ctx context.Context, d database, verb string) (store.SchemaStatus, error) {
	up, down, status, target := sqlite.MigrateUp, sqlite.MigrateDown, sqlite.MigrationStatus, d.path
	if d.kind == "postgres" {
		up, down, status, target = postgres.MigrateUp, postgres.MigrateDown, postgres.MigrationStatus, d.url
	}
	run := status
	switch verb {
	case "up":
		run = up
	case "down":
		run = down
	}
	st, err := run(ctx, target)
	if err != nil {
		return store.SchemaStatus{}, err
	}
	st.Database = d.String()
	return st, nil
}

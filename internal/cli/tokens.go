package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

func newTokens(e *env) command {
	list := newTokensList(e)
	list.use, list.subcommands = "tokens", []command{newTokensCreate(e), newTokensList(e), newTokensRevoke(e)}
	list.short = "Tokens for the APIs and the page: create, list, revoke"
	list.long = `List, create and revoke the tokens the daemon's admin address, API address
and page accept beside HERALD_ADMIN_TOKEN. A token has a role (producer,
reader, operator, admin: README, "Tokens, roles and scopes", says what each
may do) and may be scoped to stream prefixes: it then sees and acts only on
streams under them (a tenant's portal). The secret is shown once, at creation; herald keeps only
its SHA-256. A running daemon sees a new or revoked token at its next request.`
	list.example = `  herald tokens create --name "tenant 42 portal" --role operator --scope tenant/42/
  herald tokens list --json
  herald tokens revoke tok_3f9a1c0e5b7d2a48`
	return list
}

func newTokensList(e *env) command {
	return command{
		use:   "list",
		short: "List every token, revoked ones too, oldest first (never a secret)",
		example: `  herald tokens list
  herald tokens list --json`,
		db: readDB,
		run: func(c *call) error {
			out, err := operator.Tokens(c.ctx(), c.b)
			if err != nil {
				return err
			}
			return printTable(c, out, fmt.Sprintf("No token: %s makes one.", e.hint("tokens create")),
				[]string{"ID", "NAME", "ROLE", "SCOPE", "CREATED", "LAST USED", "REVOKED"}, func(v operator.TokenView) []string {
					scope := cmp.Or(strings.Join(v.Scope, " "), "every stream")
					return []string{v.ID, v.Name, string(v.Role), scope, operator.Instant(v.Created), operator.Instant(v.LastUsed), operator.Instant(v.Revoked)}
				})
		},
	}
}

func newTokensCreate(e *env) command {
	var (
		name, role string
		scope      []string
	)
	return command{
		use:   "create",
		short: "Make a token and print its secret, once",
		long: `Make a token with --name (who holds it), --role and, for a tenant, --scope
(repeatable stream prefixes: the token sees and acts only on streams that begin
with one of them). It prints the secret once: herald keeps only its SHA-256,
so a lost secret is revoked and made again. An admin token has no scope. A new
SQLite --database is made for it, as keys add makes one.`,
		example: `  herald tokens create --name ci --role producer
  herald tokens create --name "tenant 42 portal" --role operator --scope tenant/42/ --json`,
		need: []string{"name", "role"},
		db:   createDB, // a token may come before any registration, as keys add's key
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&name, "name", "", "who or what holds it, shown in lists and logs (required)")
			f.StringVar(&role, "role", "", "producer, reader, operator or admin (required)")
			f.StringArrayVar(&scope, "scope", nil, "a stream prefix it is limited to (repeatable; default: every stream)")
		},
		check: func(c *call) error {
			_, err := store.ParseRole("role", role)
			return usageOf(err)
		},
		run: func(c *call) error {
			ct, err := operator.CreateToken(c.ctx(), c.b, name, role, scope, c.at(instant{}))
			if errors.Is(err, journal.ErrInvalid) {
				err = usageOf(err)
			}
			if err != nil {
				return err
			}
			return c.print(ct, func(w io.Writer) {
				fmt.Fprintf(w, "Created %s (%s, %s", ct.ID, tbl.Cell(ct.Name), ct.Role)
				if len(ct.Scope) > 0 {
					fmt.Fprintf(w, ", scoped to %s", tbl.Cell(strings.Join(ct.Scope, " ")))
				}
				fmt.Fprintf(w, "). Its secret, shown this once:\n%s\n", ct.Secret)
				use := "Send it as Authorization: Bearer …, or log in to the page with it (herald run asks for a login when HERALD_ADMIN_TOKEN is set)"
				if ct.Role == store.RoleProducer {
					use = "Send it as Authorization: Bearer … to the API address (herald run --api-addr) to append; the page needs a reader's token or more"
				}
				fmt.Fprintf(w, "%s; %s ends it.\n", use, e.hint("tokens revoke "+ct.ID))
			})
		},
	}
}

func newTokensRevoke(e *env) command {
	var at instant
	return command{
		use:     "revoke ID",
		short:   "Revoke a token: every request and page session with it is refused from now on",
		example: `  herald tokens revoke tok_3f9a1c0e5b7d2a48`,
		args: func(args []string) error {
			if len(args) != 1 || args[0] == "" {
				return callf("tokens revoke takes one token ID (tok_…, as herald tokens list shows it)")
			}
			return nil
		},
		db:    readDB,
		flags: func(f *pflag.FlagSet) { atFlag(f, &at) },
		run: func(c *call) error {
			t, err := c.b.RevokeToken(c.ctx(), c.args[0], c.at(at))
			if errors.Is(err, journal.ErrNotFound) {
				return fmt.Errorf("%w (%s lists the tokens)", err, e.hint("tokens list"))
			} else if err != nil {
				return err
			}
			return c.print(operator.ViewToken(t), func(w io.Writer) {
				fmt.Fprintf(w, "Revoked %s (%s) at %s.\n", t.ID, tbl.Cell(t.Name), operator.Instant(t.Revoked))
			})
		},
	}
}

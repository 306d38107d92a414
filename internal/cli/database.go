package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
	"github.com/heraldpush/herald/store/sqlite"
)

// defaultDatabase is the embedded default: one SQLite file beside the user.
const defaultDatabase = "sqlite:./herald.db"

// backend is what a command works on: a SQL store, which keeps host health
// and closes.
type backend interface {
	store.Backend
	store.Resealer
	store.HostStore
	Close() error
}

// database is a parsed --database value.
type database struct {
	kind string // "sqlite" or "postgres"
	path string // sqlite: the file
	url  string // postgres: the connection URL
	name string // postgres: what String shows (postgresName)
}

// maxSQLiteName is the longest SQLite file name herald takes: 255 bytes (a
// name's most on Linux, macOS and Windows file systems) less the 8 that
// SQLite's -journal and herald's .keyring add beside it.
const maxSQLiteName = 255 - 8

// databaseHint ends every refusal of a --database value.
const databaseHint = "give sqlite:PATH (e.g. sqlite:./herald.db) or a postgres:// URL"

// parseDatabase parses s, the value of from (--database, or the variable
// HERALD_DATABASE_URL), whose name its errors give. A refusal shows no more
// of s than cannot hold a password.
func parseDatabase(from, s string) (database, error) {
	if from == "" {
		from = "--database"
	}
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		p := strings.TrimPrefix(s, "sqlite:")
		if p == "" {
			return database{}, usagef("%s sqlite: needs a path, e.g. sqlite:./herald.db", from)
		}
		if strings.Contains(p, "://") {
			return database{}, usagef("%s sqlite: is followed by a URL (not shown: it may hold a password): give a PostgreSQL URL alone, postgres://…", from)
		}
		if n := len(filepath.Base(p)); n > maxSQLiteName {
			return database{}, usagef("%s sqlite: the file name is %d bytes, more than %d (a file system's 255 less the 8 of SQLite's PATH-journal and herald's PATH.keyring beside it)", from, n, maxSQLiteName)
		}
		return database{kind: "sqlite", path: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		// Read by the driver's own parser, and shown by what it read, never
		// as the URL, whose password the driver may read where a mask would
		// not look. The driver (pgx, as libpq) ends the user and password at
		// the first '@' before any '/': a password with an unencoded '@',
		// '/', '?' or '#' puts its rest in the user, the host, the database
		// name or the query, to be shown. Such a URL is refused, unshown, as
		// is one the driver cannot read (its errors may quote the URL).
		if ambiguousURL(s) {
			return database{}, usagef("%s: the URL holds an '@' besides the one before its host, or a '/', '?' or '#' in its user or password (not shown: it may be a password's): percent-encode them as %%40, %%2F, %%3F and %%23", from)
		}
		cfg, err := pgconn.ParseConfig(s)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return database{}, usagef("%s: the driver cannot read a file that the URL or a PG* environment variable names: %w", from, pe) // sslrootcert=, PGSSLROOTCERT
		} else if err != nil {
			return database{}, usagef("%s: the driver cannot read this URL, or a PG* environment variable it reads (not shown: it may hold a password); psql names what it cannot read", from)
		}
		if what, n, most := longestPart(cfg); n > most {
			// The driver's errors repeat them whole: refused, unshown.
			return database{}, usagef("%s: the URL's %s is %d bytes, more than %d (%s)", from, what, n, most, map[string]string{
				"host": "a host name's most", "user": "PostgreSQL reads no more of a name", "database name": "PostgreSQL reads no more of a name"}[what])
		}
		name, ok := postgresName(cfg)
		if !ok {
			return database{}, usagef("%s: the URL's user, host or database name holds an '@', the word password or a character that does not print (not shown: it may be a password): percent-encode an '@' in the user or password as %%40, and give a password after user: or as ?password=", from)
		}
		return database{kind: "postgres", url: s, name: name}, nil
	case s == "":
		return database{}, usagef("%s is empty: %s", from, databaseHint)
	}
	shown, cut := s, ":=@ \t\n\v\f\r"
	if !strings.HasPrefix(s, "./") && !strings.HasPrefix(s, "../") && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
		cut += "/" // not a path: user/password, user/password@host
	}
	if i := strings.IndexAny(s, cut); i >= 0 {
		shown = s[:i] + "…" // a key=value string, or a URL of another scheme: its password comes later
	}
	return database{}, usagef("%s %s: %s", from, journal.Quoted(shown), databaseHint)
}

// String names the database without a password.
func (d database) String() string {
	if d.kind == "sqlite" {
		return "sqlite:" + d.path
	}
	return d.name
}

// ambiguousURL says whether a postgres:// URL holds an '@' besides the one
// that ends its userinfo, or a '?', '#', '[' or ']' in its userinfo: where a
// password's character would be read as another part.
func ambiguousURL(s string) bool {
	info, rest, _ := userinfo(s)
	return strings.ContainsAny(info, "?#[]") || strings.Contains(rest, "@")
}

// mayHoldPassword says whether the driver may read a password from a
// postgres:// URL: its userinfo holds a ':', or the URL, percent-decoded,
// holds the word anywhere (a password or sslpassword parameter), or it
// cannot be decoded.
func mayHoldPassword(s string) bool {
	un, err := url.PathUnescape(s)
	if err != nil || strings.Contains(strings.ToLower(un), "password") {
		return true
	}
	info, _, _ := userinfo(s)
	return strings.Contains(info, ":")
}

// userinfo splits a postgres:// URL past its scheme as the driver (pgx, as
// libpq) does: the userinfo ends at the first '@' before any '/', even past
// a '?'. ok is false, and info "", when there is none.
func userinfo(s string) (info, rest string, ok bool) {
	_, p, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		return p[:i], p[i+1:], true
	}
	return "", p, false
}

// longestPart is the part of cfg longest past what PostgreSQL reads of it
// (a user or database name: NAMEDATALEN-1, 63 bytes; a host: a DNS name's
// 253), its length and that most.
func longestPart(cfg *pgconn.Config) (what string, n, most int) {
	what, n, most = "user", len(cfg.User), 63
	if len(cfg.Database)-63 > n-most {
		what, n, most = "database name", len(cfg.Database), 63
	}
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if len(h)-253 > n-most {
			what, n, most = "host", len(h), 253
		}
	}
	return what, n, most
}

// postgresName names the database that cfg connects to, as
// postgres://user@host:port[,host:port…]/database, and says whether it may
// be shown: whether no host nor the database name holds an '@' (then a
// password's rest, see parseDatabase), and no part the word password (one
// typed in the path, postgres://h/db&password=…) or a character that does
// not print.
func postgresName(cfg *pgconn.Config) (string, bool) {
	hosts := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks { // each host, with and without TLS
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	joined := strings.Join(hosts, ",")
	parts := cfg.User + joined + cfg.Database
	ok := !strings.Contains(joined+cfg.Database, "@") && !strings.Contains(strings.ToLower(parts), "password") &&
		!strings.ContainsFunc(parts, func(r rune) bool { return !unicode.IsPrint(r) })
	return "postgres://" + cfg.User + "@" + joined + "/" + cfg.Database, ok
}

// openMode is what a command may do to a SQLite --database (PostgreSQL is
// created and migrated only by herald migrate up).
type openMode int

const (
	noDB       openMode = iota // the command opens none, or its own (migrate, demo)
	createDB                   // create and migrate a new file, migrate an older one up (register, append, keys add, tokens create)
	existingDB                 // refuse a missing file (a mistyped path would serve an empty database), migrate up (sweep, run, reseal, keyring retire)
	readDB                     // refuse a missing file, migrate nothing, so that none undoes a herald migrate down
)

func (e *env) open(ctx context.Context, mode openMode) (backend, error) {
	d, err := parseDatabase(e.databaseFrom, e.database)
	if err != nil {
		return nil, err
	}
	var b backend
	if d.kind == "sqlite" && mode == createDB {
		if _, serr := os.Stat(filepath.Dir(d.path)); errors.Is(serr, fs.ErrNotExist) {
			return nil, usagef("no folder for a new herald database at %s: create %s first, or point --database (or HERALD_DATABASE_URL) elsewhere", journal.Shown(d.String()), journal.Quoted(filepath.Dir(d.path)))
		}
	}
	if e.keys, err = e.keyring(ctx, d, mode); err != nil {
		return nil, err
	}
	switch {
	case d.kind == "sqlite" && mode == existingDB:
		if _, serr := os.Stat(d.path); errors.Is(serr, fs.ErrNotExist) {
			return nil, noDatabase(d)
		}
		b, err = sqlite.Open(ctx, d.path, sqlite.WithKeyring(e.keys))
	case d.kind == "sqlite" && mode == createDB:
		b, err = sqlite.Open(ctx, d.path, sqlite.WithKeyring(e.keys))
	case d.kind == "sqlite":
		b, err = sqlite.Open(ctx, d.path, sqlite.WithoutMigrating(), sqlite.WithKeyring(e.keys))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, noDatabase(d)
		}
	default:
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var s *postgres.Store
		if s, err = postgres.Open(pctx, d.url, postgres.WithSequencerInterval(cmp.Or(e.seqEvery, postgres.DefaultSequencerInterval)),
			postgres.WithKeyring(e.keys)); err == nil {
			b = s
			if mode == existingDB { // run, sweep: they write as the owner
				if err = s.CheckOwner(pctx); err != nil {
					_ = s.Close()
				}
			}
		}
	}
	if err != nil {
		return nil, e.openError(d, err)
	}
	return b, nil
}

// noDatabase is the refusal of a SQLite path with no file, for a command
// that creates none.
func noDatabase(d database) error {
	return usagef("no herald database at %s (this command creates none): point --database (or HERALD_DATABASE_URL) at yours; register, append, keys add, tokens create and migrate up create a new one", journal.Shown(d.String()))
}

func (e *env) openError(d database, err error) error {
	var hint string
	switch {
	case errors.Is(err, store.ErrSchemaBehind) && e.databaseGiven: // else the error's own words say it
		hint = "with this database: " + e.hint("migrate up")
	case errors.Is(err, store.ErrSchemaAhead):
		hint = "this herald is older than the database: upgrade herald"
	case errors.Is(err, store.ErrNotHerald):
		hint = "point --database at a herald database, or at a new file"
	case errors.Is(err, store.ErrSchemaOtherBuild):
		hint = "before herald's first release no migration leads from one build's schema to another's: run the build that made this database, or start a new one (README, \"Upgrading\")"
	case errors.Is(err, store.ErrSchemaDirty):
		hint = "a migration did not finish: check the schema, record its version as the error says, then run herald migrate up"
	}
	if hint != "" {
		return fmt.Errorf("cannot use database %s: %w\n%s", d, err, hint)
	}
	return fmt.Errorf("cannot open database %s: %w", journal.Shown(d.String()), err)
}

func newMigrate(e *env) command {
	var yes bool
	return command{
		use:   "migrate up|down|status",
		short: "Apply, revert or show the database schema's migrations",
		long: `Manage the database schema. "up" applies every pending migration; "down"
reverts the newest one (it drops what that migration created: data in those
tables is lost), so it asks first on a terminal and otherwise needs --yes;
"status" lists the migrations and which are applied.

register, append, keys add, tokens create and "up" create a new SQLite file and
migrate it; "down" and "status" refuse a path with no file. PostgreSQL is
migrated only by "herald migrate up", so that a deploy controls when it happens.`,
		example: `  herald migrate up --database postgres://herald@localhost/herald
  herald migrate status --json
  herald migrate down --yes --database sqlite:./herald.db`,
		args: func(args []string) error {
			if len(args) != 1 || (args[0] != "up" && args[0] != "down" && args[0] != "status") {
				return callf("migrate takes one argument, up, down or status, not %s", journal.Quoted(strings.Join(args, " ")))
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
			if _, serr := os.Stat(d.path); d.kind == "sqlite" && c.args[0] != "up" && errors.Is(serr, fs.ErrNotExist) {
				return noDatabase(d)
			}
			if c.args[0] == "down" && !yes {
				if err := e.confirmDown(c.ctx(), d); err != nil {
					return err
				}
			}
			st, err := migrate(c.ctx(), d, c.args[0])
			if errors.Is(err, store.ErrSchemaOtherBuild) {
				return e.openError(d, err) // with what to do: no migration helps
			} else if err != nil {
				return fmt.Errorf("migrate %s %s: %w", c.args[0], d, err)
			}
			return c.print(st, func(w io.Writer) {
				fmt.Fprintf(w, "%s: schema version %d of %d.\n", st.Database, st.Current, st.Latest)
				t := tbl.New(w, "VERSION", "NAME", "APPLIED")
				for _, m := range st.Migrations {
					t.Row(fmt.Sprint(m.Version), m.Name, yesNo(m.Applied))
				}
				t.Flush()
			})
		},
	}
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
	run := map[string]func(context.Context, string) (store.SchemaStatus, error){"up": sqlite.MigrateUp, "down": sqlite.MigrateDown, "status": sqlite.MigrationStatus}
	target := d.path
	if d.kind == "postgres" {
		run = map[string]func(context.Context, string) (store.SchemaStatus, error){"up": postgres.MigrateUp, "down": postgres.MigrateDown, "status": postgres.MigrationStatus}
		target = d.url
	}
	st, err := run[verb](ctx, target)
	if err != nil {
		return store.SchemaStatus{}, err
	}
	st.Database = d.String()
	return st, nil
}

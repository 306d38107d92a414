package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/seal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// keyringSuffix names a SQLite database's default key file: PATH.keyring.
const keyringSuffix = ".keyring"

// keyringFlagUsage is --keyring-file's line in every command's help.
const keyringFlagUsage = "key file sealing registrations' secrets (env HERALD_KEYRING holds the keys instead; SQLite default: the database's path + .keyring, made on first use)"

// keyringPath is the key file the commands use with d; "" for none.
func (e *env) keyringPath(d database) string {
	switch {
	case e.keyringFile != "":
		return e.keyringFile
	case d.kind == "sqlite":
		return d.path + keyringSuffix
	}
	return ""
}

// keyring returns the keyring to open d with (README, "Security"):
// --keyring-file; else HERALD_KEYRING; else for SQLite the key file beside
// the database, made (0600) when missing and the command may create the
// database or it exists and holds no sealed value; else none (PostgreSQL
// then refuses a secret).
func (e *env) keyring(ctx context.Context, d database, mode openMode) (*seal.Keyring, error) {
	if e.keyringFile == "" {
		if v := e.getenv("HERALD_KEYRING"); v != "" {
			k, err := seal.Parse(v)
			if err != nil {
				return nil, usagef("HERALD_KEYRING: %w", err)
			}
			return k, nil
		}
	}
	path := e.keyringPath(d)
	if path == "" {
		return nil, nil
	}
	k, err := seal.LoadFile(path)
	switch {
	case err == nil:
		return k, nil
	case e.keyringFile != "" && errors.Is(err, fs.ErrNotExist):
		return nil, usagef("--keyring-file %s: no such file: herald keyring new --keyring-file %s makes one", journal.Shown(path), shellQuote(path))
	case e.keyringFile != "":
		return nil, readError("--keyring-file", path, err, "")
	}
	if _, serr := os.Stat(d.path); mode != createDB && errors.Is(serr, fs.ErrNotExist) {
		return nil, nil // no database either: the command refuses it
	}
	if !errors.Is(err, fs.ErrNotExist) {
		// The default key file's path is the database's: blame the value
		// given, not a --keyring-file nobody typed.
		return nil, readError(cmp.Or(e.databaseFrom, "--database")+" "+journal.Shown(d.String())+": its key file", path, err,
			" (the database's path + "+keyringSuffix+"; --keyring-file or HERALD_KEYRING gives another)")
	}
	if _, serr := os.Stat(d.path); serr == nil {
		id, err := sqlite.SealedKeyID(ctx, d.path)
		if err != nil {
			return nil, err
		}
		if id != "" {
			return nil, usagef("%s %s holds secrets sealed under key %s, and its key file %s is missing: restore that file beside it, or give the keyring with --keyring-file or HERALD_KEYRING (herald makes a key file only for a database that holds no sealed secret)",
				cmp.Or(e.databaseFrom, "--database"), journal.Shown(d.String()), journal.Quoted(id), journal.Quoted(path))
		}
	}
	k = seal.Generate()
	if err := seal.CreateFile(path, k); errors.Is(err, fs.ErrExist) {
		return seal.LoadFile(path) // another herald made it first
	} else if err != nil {
		return nil, fmt.Errorf("make the key file %s beside the database: %w", path, err)
	}
	return k, nil
}

func newKeyring(e *env) command {
	return command{
		use:   "keyring new|rotate|retire|list",
		short: "Make, rotate and retire the keys that seal registrations' secrets",
		long: `Registrations' secrets (webhook secrets, bearer tokens, A2A credentials,
ActivityPub private keys) are stored sealed with AES-256-GCM under a keyring
(README, "Security"): a key file of one "id:base64key" a line, the last the
primary, which seals; every key opens. --keyring-file names the file; the
variable HERALD_KEYRING may hold its lines instead (commas or spaces between
keys). A SQLite database's default is its path + .keyring, made 0600 on
first use. PostgreSQL has no default: without a keyring it refuses a
registration holding a secret.

  new           make a new key file (0600) at --keyring-file
  rotate        add a new primary key to the key file; restart herald run
                with it, then herald reseal
  retire ID     reseal the database (herald reseal), then drop key ID
  list          the key ids, the primary last (never the keys)

rotate and retire edit a key file; with HERALD_KEYRING, edit its value the
same way (a new key from herald keyring new --keyring-file, last).`,
		example: `  herald keyring new --keyring-file /etc/herald/keyring
  herald keyring rotate --keyring-file /etc/herald/keyring
  herald reseal --keyring-file /etc/herald/keyring --database postgres://herald@db/herald
  herald keyring retire k1a2b3c4d --keyring-file /etc/herald/keyring --database postgres://herald@db/herald`,
		args: func(args []string) error {
			switch {
			case len(args) == 0:
				return callf("keyring takes new, rotate, retire ID or list")
			case args[0] == "retire" && len(args) != 2:
				return callf("keyring retire takes the key id to drop")
			case args[0] != "retire" && (len(args) != 1 || !strings.Contains(" new rotate list ", " "+args[0]+" ")):
				return callf("keyring takes new, rotate, retire ID or list, not %s", journal.Quoted(strings.Join(args, " ")))
			}
			return nil
		},
		run: func(c *call) error {
			path := e.keyringFile
			if path == "" && c.args[0] != "list" && e.getenv("HERALD_KEYRING") != "" {
				return usagef("keyring %s edits a key file, and HERALD_KEYRING holds the keys: edit its value, or give --keyring-file", c.args[0])
			}
			if path == "" {
				d, err := parseDatabase(e.databaseFrom, e.database)
				if err != nil {
					return err
				}
				if path = e.keyringPath(d); path == "" || c.args[0] == "new" {
					return usagef("keyring %s: give --keyring-file PATH (PostgreSQL has no default key file)", c.args[0])
				}
			}
			var (
				k   *seal.Keyring
				err error
			)
			switch c.args[0] {
			case "new":
				k = seal.Generate()
				if err = seal.CreateFile(path, k); errors.Is(err, fs.ErrExist) {
					return usagef("--keyring-file %s exists: herald keyring rotate adds a key to it", journal.Shown(path))
				}
			case "rotate", "retire", "list":
				if k, err = seal.LoadFile(path); err != nil {
					return readError("--keyring-file", path, err, "")
				}
				if c.args[0] == "rotate" {
					k = k.Rotated()
				} else if c.args[0] == "retire" {
					if k, err = k.Without(c.args[1]); err != nil {
						return usageOf(err)
					}
					if err := e.resealBefore(c, c.args[1]); err != nil {
						return err
					}
				}
				if c.args[0] != "list" {
					err = seal.ReplaceFile(path, k)
				}
			}
			if err != nil {
				return fmt.Errorf("keyring %s %s: %w", c.args[0], path, err)
			}
			v := keyringView{File: path, Primary: k.Primary(), Keys: k.IDs()}
			return c.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "%s: keys %s; primary %s.\n", path, strings.Join(v.Keys, ", "), v.Primary)
				switch c.args[0] {
				case "new":
					fmt.Fprintln(w, "Keep it apart from the database and its backups, readable by herald only.")
				case "rotate":
					fmt.Fprintln(w, "New secrets are sealed under the new primary: herald reseal seals the stored ones under it, then herald keyring retire drops an old key.")
				}
			})
		},
	}
}

// resealBefore reseals the database under the primary key before key id is
// retired, so that nothing stays sealed under it.
func (e *env) resealBefore(c *call, id string) error {
	b, err := e.open(c.ctx(), existingDB)
	if err != nil {
		return fmt.Errorf("keyring retire %s reseals the database first: %w", id, err)
	}
	defer b.Close()
	if _, err := e.resealAll(c.ctx(), b, 500); err != nil {
		return fmt.Errorf("keyring retire %s: nothing retired: %w", id, err)
	}
	return nil
}

// keyringView is what herald keyring prints: never a key.
type keyringView struct {
	File    string   `json:"file"`
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"` // key ids, the primary last
}

func newReseal(e *env) command {
	var batch int
	return command{
		use:   "reseal",
		short: "Seal every stored secret under the keyring's primary key",
		long: `Seal every registration's config under the keyring's primary key: those
sealed under an older key, and those stored in clear (before a keyring). Run it
after herald keyring rotate; once it reports nothing left under another key,
herald keyring retire drops the old key. It is idempotent and may run beside
herald run: a registration changed meanwhile is sealed by its change.

It works in batches of --batch registrations, logging each to stderr. A value
sealed under a key the keyring lacks stops it with an error naming the key.
On SQLite, VACUUM the file afterwards to drop the pages that held the old
values.`,
		example: `  herald reseal
  herald reseal --keyring-file /etc/herald/keyring --database postgres://herald@db/herald --json`,
		db: existingDB,
		flags: func(f *pflag.FlagSet) {
			intVar(f, &batch, "batch", 500, "registrations a batch", "1 to 100000", 1, 100000)
		},
		run: func(c *call) error {
			if e.keys == nil {
				return usagef("reseal: no keyring: %v", store.ErrNoKeyring)
			}
			total, err := e.resealAll(c.ctx(), c.b, batch)
			if err != nil {
				return err
			}
			return c.print(total, func(w io.Writer) {
				fmt.Fprintf(w, "Read %s, sealed %d anew: every config, actor key and subscription is sealed under key %s.\n", plural(total.Read, "registration"), total.Resealed, total.Primary)
			})
		},
	}
}

// resealAll reseals every registration's config of b, batch at a time,
// logging each batch.
func (e *env) resealAll(ctx context.Context, b backend, batch int) (resealView, error) {
	total := resealView{Primary: e.keys.Primary()}
	for after := (store.Key{}); ; {
		page, err := b.Reseal(ctx, after, batch)
		if err != nil {
			return total, fmt.Errorf("reseal after %d registrations read: %w", total.Read, err)
		}
		total.Read, total.Resealed, after = total.Read+page.Read, total.Resealed+page.Resealed, page.Last
		e.logger.Info("reseal", "read", total.Read, "resealed", total.Resealed)
		if !page.More {
			others, err := b.ResealOthers(ctx) // actor keys and subscriptions: few, one write
			if err != nil {
				return total, fmt.Errorf("reseal actor keys and subscriptions: %w", err)
			}
			total.Resealed += others
			return total, nil
		}
	}
}

// resealView is what herald reseal prints.
type resealView struct {
	Read     int    `json:"read"`     // registrations read
	Resealed int    `json:"resealed"` // values sealed anew under the primary key: configs, actor keys, subscriptions' configs
	Primary  string `json:"primary"`  // the key every config is sealed under now
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
)

func newKeys(e *env) command {
	list := newKeysList(e)
	list.use, list.subcommands = "keys", []command{newKeysAdd(e), newKeysList(e), newKeysRotate(e), newKeysRemove(e)}
	list.short = "Actors' signing keys, held once by key id: add, list, rotate, remove"
	list.long = `ActivityPub actors' private keys, each held once under its key id (the
signature's keyId, "https://example.com/users/alice#main-key"), for every
registration that names it (herald register --namespace activitypub --key-id
ID, without --private-key-file). A key is RSA (2048 to 8192 bits, PKCS#1 or
PKCS#8) or Ed25519 (PKCS#8), PEM, not encrypted; it is stored sealed under
the keyring, like registrations' secrets, and never printed. rotate replaces
it: every registration naming it signs with the new key from its next
attempt, in every process on the database. remove is refused while
registrations name the key, saying how many, unless --force.`
	list.example = `  herald keys add --key-id https://example.com/users/alice#main-key --private-key alice.pem
  herald keys list --json
  herald keys rotate --key-id https://example.com/users/alice#main-key --private-key alice-2026.pem
  herald keys remove --key-id https://example.com/users/alice#main-key`
	return list
}

func newKeysList(e *env) command {
	return command{
		use:   "list",
		short: "List every held key by id: algorithm, fingerprint, version, created, rotated (never the key)",
		example: `  herald keys list
  herald keys list --json`,
		db: readDB,
		run: func(c *call) error {
			out, err := operator.Keys(c.ctx(), c.b)
			if err != nil {
				return err
			}
			return printTable(c, out, fmt.Sprintf("No key: %s holds one.", e.hint("keys add")),
				[]string{"KEY ID", "ALGORITHM", "FINGERPRINT", "VERSION", "CREATED", "ROTATED"}, func(v operator.KeyView) []string {
					return []string{v.ID, v.Algorithm, v.Fingerprint, fmt.Sprint(v.Version), operator.Instant(v.Created), operator.Instant(v.Rotated)}
				})
		},
	}
}

// actorKeyFlags are add's and rotate's flags.
type actorKeyFlags struct {
	id, file string
	at       instant
}

func (k *actorKeyFlags) flags(f *pflag.FlagSet) {
	f.StringVar(&k.id, "key-id", "", "the key's id, the signature's keyId: an absolute http(s) URI (required)")
	f.StringVar(&k.file, "private-key", "", "PEM file of the private key: RSA (PKCS#1 or PKCS#8) or Ed25519 (PKCS#8) (required)")
	f.Var(&k.at, "at", "the instant recorded as created or rotated: RFC 3339 or unix seconds (default now)")
}

func (k *actorKeyFlags) read() ([]byte, error) {
	pem, err := readFlagFile(k.file)
	if err != nil {
		return nil, readError("--private-key", k.file, err, " (give a PEM file of the actor's private key)")
	}
	return pem, nil
}

func keyErr(e *env, err error) error {
	switch {
	case errors.Is(err, journal.ErrInvalid):
		return usageOf(err)
	case errors.Is(err, journal.ErrNotFound):
		return usageOf(fmt.Errorf("%w (%s lists the keys)", err, e.hint("keys list")))
	case errors.Is(err, journal.ErrConflict):
		return usageOf(err)
	}
	return err
}

func newKeysAdd(e *env) command {
	c := keyPut(e, operator.AddKey, func(w io.Writer, v operator.KeyView) {
		fmt.Fprintf(w, "Added %s: %s, %s.\n", tbl.Cell(v.ID), v.Algorithm, v.Fingerprint)
	})
	c.use, c.short = "add", "Hold an actor's private key under its key id"
	c.long = `Hold the private key in --private-key under --key-id. The key is parsed
(its algorithm is said) and stored sealed; an id held already is refused
(herald keys rotate replaces a key). A new SQLite --database is made for it,
as register makes one: keys come before the registrations that name them.`
	c.db = createDB
	c.example = `  herald keys add --key-id https://example.com/users/alice#main-key --private-key alice.pem`
	return c
}

func newKeysRotate(e *env) command {
	c := keyPut(e, operator.RotateKey, func(w io.Writer, v operator.KeyView) {
		fmt.Fprintf(w, "Rotated %s to version %d: %s, %s.\n", tbl.Cell(v.ID), v.Version, v.Algorithm, v.Fingerprint)
	})
	c.use, c.short = "rotate", "Replace a held key: every registration naming it signs with the new one from its next attempt"
	c.long = `Replace the key held under --key-id with the one in --private-key: every
registration signing with it uses the new key from its next attempt. An Ed25519
key is refused (exit 2), naming them, while a registration or subscription
signing with the key pins --signature-scheme cavage, which Ed25519 cannot sign:
register those again with rfc9421 or no scheme pinned first.`
	c.example = `  herald keys rotate --key-id https://example.com/users/alice#main-key --private-key alice-2026.pem`
	return c
}

// keyPut is keys add or rotate: put stores the key in --private-key under
// --key-id, and text says what it did.
func keyPut(e *env, put func(context.Context, operator.KeyStore, string, string, string, []byte, time.Time) (operator.KeyView, error),
	text func(io.Writer, operator.KeyView)) command {
	var (
		k   actorKeyFlags
		pem []byte
	)
	return command{
		need:  []string{"key-id", "private-key"},
		db:    readDB,
		flags: k.flags,
		check: func(*call) (err error) { // before a database is opened, or made (keys add)
			if pem, err = k.read(); err == nil {
				err = usageOf(operator.CheckKey("--key-id", "--private-key", k.id, pem))
			}
			return err
		},
		run: func(c *call) error {
			v, err := put(c.ctx(), c.b, "--key-id", "--private-key", k.id, pem, c.at(k.at))
			if err != nil {
				return keyErr(e, err)
			}
			return c.print(v, func(w io.Writer) { text(w, v) })
		},
	}
}

func newKeysRemove(e *env) command {
	var (
		id    string
		force bool
	)
	return command{
		use:   "remove",
		short: "Remove a held key; refused while registrations name it, unless --force",
		long: `Remove the key held under --key-id. While registrations sign with it, it is
refused, saying how many; with --force it is removed anyway, and their
deliveries fail (retried, with evidence naming the key id) until the key is
added again or they are registered with another.`,
		example: `  herald keys remove --key-id https://example.com/users/alice#main-key`,
		need:    []string{"key-id"},
		db:      readDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&id, "key-id", "", "the key's id (required)")
			f.BoolVar(&force, "force", false, "remove it even while registrations name it")
		},
		run: func(c *call) error {
			users, err := operator.RemoveKey(c.ctx(), c.b, id, force)
			if inUse, ok := errors.AsType[*operator.KeyInUseError](err); ok {
				inUse.Force = "--force"
			}
			if err != nil {
				return keyErr(e, err)
			}
			return c.print(map[string]any{"key_id": id, "removed": true, "registrations": users}, func(w io.Writer) {
				fmt.Fprintf(w, "Removed %s.\n", tbl.Cell(id))
				if users > 0 {
					fmt.Fprintf(w, "%s named it: their deliveries fail until it is added again.\n", plural(users, "registration"))
				}
			})
		},
	}
}

// Package seal encrypts secrets at rest under an operator's keyring, so that
// a copy of herald's database (a dump, a backup, a stolen disk image) shows
// none of them. The stores seal every registration's config with it
// (store.Sealer): webhook secrets, bearer tokens, A2A credentials,
// ActivityPub private keys, and whatever a config holds later.
//
// # Format
//
// A Keyring holds 256-bit keys by key id; the primary (the last) seals,
// every key opens. A sealed value is self-describing text:
//
//	hs1:<key id>:<base64url, unpadded, of nonce | ciphertext | tag>
//
// hs1 is AES-256-GCM (NIST SP 800-38D) with a random 96-bit nonce, and the
// caller's additional data (AD), which binds the value to where it is kept:
// a registration's stream and id, so that a value copied to another row
// does not open there. A value that does not open is an error naming the
// key id (ErrOpen, ErrUnknownKey), never an empty config. In a store that
// error is its registration's alone (store.Registration.ConfigError): lists
// show it, and a worker fails that registration's attempts with it (parked
// at its ceiling, resumed by unpark once the keyring holds the key) while
// every other registration is served.
//
// # Keys
//
// A key file holds one "id:base64key" a line, '#' comments, the primary
// last (Parse); the variable HERALD_KEYRING may hold the same entries,
// separated by newlines, commas or spaces. README, "Security", says which
// commands take which, and SQLite's default key file (its -wal and -shm
// files get the database's 0600 too); PostgreSQL without a keyring refuses
// a secret (store.ErrNoKeyring).
//
// # Rotation
//
// `herald keyring rotate` adds a new primary key; restart the daemons with
// it; `herald reseal` seals every config under it (batched, idempotent, safe
// beside a daemon); `herald keyring retire ID` reseals again and drops the
// old key. A config stored in clear before a keyring was given is read as
// it is until reseal seals it. SQLite keeps freed pages: VACUUM after
// resealing drops the old values from the file.
//
// # What it protects, and what not
//
// It protects the secrets in a copy of the database alone: a dump, a
// backup, a replica, the file sent with a bug report, a reader of the
// tables. It does not protect them from whoever holds the keyring too (the
// key file beside a SQLite database travels with it if the folder is copied
// whole: keep backups of the two apart), nor from the host or the process
// running herald, which holds the keys to deliver.
package seal

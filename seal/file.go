package seal

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Parse reads a keyring in the key file format: one key an entry,
// "<id>:<base64 of 32 bytes>" (standard or URL alphabet, padded or not),
// entries on lines of their own or separated by commas or spaces (for an
// environment variable); lines starting with '#' are comments. The last key
// is the primary. Errors name the entry by its number, never quote a key.
func Parse(text string) (*Keyring, error) {
	var (
		ids  []string
		keys = map[string][]byte{}
	)
	n := 0
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, entry := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\n' }) {
			n++
			id, b64, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("keyring: entry %d is not id:base64key", n)
			}
			key, err := decodeKey(b64)
			if err != nil {
				return nil, fmt.Errorf("keyring: entry %d (key %q): the key is not base64", n, id)
			}
			if _, dup := keys[id]; dup {
				return nil, fmt.Errorf("keyring: key id %q is given twice", id)
			}
			ids, keys[id] = append(ids, id), key
		}
	}
	return New(ids, keys)
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Marshal returns k in the key file format, the primary last.
func (k *Keyring) Marshal() []byte {
	var b strings.Builder
	b.WriteString("# herald keyring: id:base64key, one a line; the last is the primary (seals), all open.\n")
	b.WriteString("# Keep it apart from the database and its backups: with both, the secrets read.\n")
	for _, id := range k.ids {
		fmt.Fprintf(&b, "%s:%s\n", id, base64.StdEncoding.EncodeToString(k.secrets[id]))
	}
	return []byte(b.String())
}

// MaxFileBytes bounds a key file LoadFile reads: thousands of keys, and
// never a device's endless bytes (/dev/zero) in memory.
const MaxFileBytes = 1 << 20

// LoadFile reads the key file at path (Parse), of at most MaxFileBytes.
// Its errors are os.Open's, a read's and Parse's: the caller names path (it
// may be a user's text, of any length).
func LoadFile(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > MaxFileBytes:
		return nil, fmt.Errorf("keyring: is longer than %d bytes: not a key file", MaxFileBytes)
	}
	return Parse(string(b))
}

// CreateFile writes k to a new file at path, mode 0600; it fails with
// fs.ErrExist when there is one.
func CreateFile(path string, k *Keyring) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(k.Marshal())
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// ReplaceFile writes k over the file at path atomically (a new file, mode
// 0600, renamed over it).
func ReplaceFile(path string, k *Keyring) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := CreateFile(tmp, k); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

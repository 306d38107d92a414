package daemon

import (
	"fmt"
	"math"
	"strings"
)

// MinTokenBits is the least entropy a static token (HERALD_ADMIN_TOKEN,
// HERALD_API_TOKEN) may have, as NIST SP 800-63B asks of a look-up secret
// and as a random 128-bit key has: guessing it, at any rate a server
// allows, is out of reach.
const MinTokenBits = 128

// MakeTokenHint says how to make a token CheckToken accepts.
const MakeTokenHint = "make one with: openssl rand -hex 32"

// CheckToken refuses a static token that could be guessed or cannot be
// sent: one under MinTokenBits (counting 4 bits a character for a hex
// token, 6 for any other, so at least 32 hex or 22 base64url characters),
// one of fewer than 8 distinct characters (aaaa…, abab…), or one with a
// space around it or a character a header cannot carry. "" (no token) is
// accepted. The error names field and never the token.
func CheckToken(field, token string) error {
	if token == "" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s "+format+"; it must be random, of at least %d bits (32 hex or 22 base64url characters): %s",
			append(append([]any{field}, args...), MinTokenBits, MakeTokenHint)...)
	}
	if strings.TrimSpace(token) != token {
		return bad("starts or ends with a space, which an Authorization header drops")
	}
	distinct := map[rune]bool{}
	hex := true
	for i, r := range token {
		if r < 0x21 || r > 0x7e {
			return bad("has a character an HTTP header cannot carry (a space, control or non-ASCII character at byte %d)", i)
		}
		distinct[r] = true
		hex = hex && strings.ContainsRune("0123456789abcdefABCDEF", r)
	}
	perChar := 6.0
	if hex {
		perChar = 4
	}
	if bits := perChar * float64(len(token)); bits < MinTokenBits {
		return bad("is too weak: %d characters hold at most %d bits", len(token), int(math.Floor(bits)))
	}
	if len(distinct) < 8 {
		return bad("is too weak: it is made of only %d distinct characters", len(distinct))
	}
	return nil
}

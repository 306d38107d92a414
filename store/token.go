package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Role is what a token may do. Each role may do what the roles before it
// in Roles may (internal/operator's Access table says what each route and
// page action needs).
type Role string

// The roles, least first.
const (
	RoleProducer Role = "producer" // append records
	RoleReader   Role = "reader"   // read status, registrations, records, evidence
	RoleOperator Role = "operator" // register, unregister, unpark, skip, rewind, reset hosts
	RoleAdmin    Role = "admin"    // create, list and revoke tokens
)

// Roles are the roles, least first.
var Roles = []Role{RoleProducer, RoleReader, RoleOperator, RoleAdmin}

// Covers reports whether r may do what need may. An unknown role covers
// nothing.
func (r Role) Covers(need Role) bool {
	i, j := slices.Index(Roles, r), slices.Index(Roles, need)
	return i >= 0 && j >= 0 && i >= j
}

// ParseRole reads a role by name; field names it in the error, which wraps
// journal.ErrInvalid.
func ParseRole(field, s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", journal.Invalid(field, "%q must be one of producer, reader, operator, admin", s)
}

// TokenPrefix begins every token herald makes, so that a leaked one is
// recognised (by a secret scanner, or in a log) for what it is.
const TokenPrefix = "hrt_"

// tokenBytes is a token's random secret: 256 bits, twice what guessing
// needs (daemon.MinTokenBits), as base64url after TokenPrefix.
const tokenBytes = 32

// Token is a stored token: its id, what it may do, and never its secret,
// only the secret's SHA-256. The secret is random and of 256 bits, so a
// fast hash is as strong as a slow one: a slow hash (bcrypt, argon2)
// stretches a guessable password, and nothing stretches a 2^256 search
// further; a fast one lets each request be checked by a lookup.
type Token struct {
	ID       string    `json:"id"`                    // "tok_" and 16 hex characters, made by MintToken
	Name     string    `json:"name"`                  // the operator's label: who holds it
	Role     Role      `json:"role"`                  // see Roles
	Scope    []string  `json:"scope"`                 // stream prefixes it is limited to; empty: every stream
	Hash     []byte    `json:"-"`                     // SHA-256 of the secret (HashToken)
	Created  time.Time `json:"created_at"`            // when it was made
	LastUsed time.Time `json:"last_used_at,omitzero"` // about when it was last accepted (to the minute); zero: never
	Revoked  time.Time `json:"revoked_at,omitzero"`   // when it was revoked; zero: it is valid
}

// MaxTokenName is the longest token name, in bytes.
const MaxTokenName = 200

// MaxScopes is the most stream prefixes a token's scope holds.
const MaxScopes = 100

// Sees reports whether t may see stream: it has no scope, or stream
// begins with one of its prefixes.
func (t Token) Sees(stream string) bool {
	return len(t.Scope) == 0 || slices.ContainsFunc(t.Scope, func(p string) bool { return strings.HasPrefix(stream, p) })
}

// HashToken is what a store keeps of a token's secret: its SHA-256.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// MintToken makes a token for name, role and scope, created at at: the
// secret to give its holder once, and the Token to store. Errors name the
// field and wrap journal.ErrInvalid.
func MintToken(name string, role Role, scope []string, at time.Time) (secret string, t Token, err error) {
	var id [8]byte
	var key [tokenBytes]byte
	rand.Read(id[:]) // crypto/rand never fails: it crashes the program first
	rand.Read(key[:])
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(key[:])
	t = Token{ID: "tok_" + hex.EncodeToString(id[:]), Name: name, Role: role, Scope: scope, Hash: HashToken(secret), Created: at.UTC()}
	if err := ValidateToken(t); err != nil {
		return "", Token{}, err
	}
	return secret, t, nil
}

// ValidateToken checks a token before a store keeps it: an id, a name
// (journal.ValidateText, at most MaxTokenName bytes), a known role, a
// 32-byte hash, a creation instant, and a scope of at most MaxScopes
// distinct stream prefixes, none for an admin (who could mint itself an
// unscoped token), none that covers herald's own streams without naming
// them ("h", "herald"). Errors name the field and wrap journal.ErrInvalid.
func ValidateToken(t Token) error {
	if err := journal.ValidateText("id", t.ID, 64); err != nil {
		return err
	}
	if err := journal.ValidateText("name", t.Name, MaxTokenName); err != nil {
		return err
	}
	if strings.TrimSpace(t.Name) == "" {
		return journal.Invalid("name", "is only white space: name who holds the token, as lists show it")
	}
	if _, err := ParseRole("role", string(t.Role)); err != nil {
		return err
	}
	switch {
	case len(t.Hash) != sha256.Size:
		return journal.Invalid("hash", "is %d bytes: it must be a SHA-256 (32 bytes)", len(t.Hash))
	case t.Created.IsZero():
		return journal.Invalid("created", "is zero: give the instant the token was made")
	case t.Role == RoleAdmin && len(t.Scope) > 0:
		return journal.Invalid("scope", "is given for an admin token: an admin manages tokens, and could make itself one of any scope; give the tenant an operator or reader token")
	case len(t.Scope) > MaxScopes:
		return journal.Invalid("scope", "has %d prefixes: at most %d", len(t.Scope), MaxScopes)
	}
	for i, p := range t.Scope {
		if err := journal.ValidateStream(p); err != nil {
			return journal.Invalid(fmt.Sprintf("scope[%d]", i), "%q is not a stream prefix: %v", p, err)
		}
		if slices.Contains(t.Scope[:i], p) {
			return journal.Invalid(fmt.Sprintf("scope[%d]", i), "%q is given twice", p)
		}
		if len(p) < len(journal.ReservedPrefix) && strings.HasPrefix(journal.ReservedPrefix, p) {
			field, reason := fmt.Sprintf("scope[%d]", i), "%q covers herald's own streams (%s…), whose events are every tenant's: "
			if p+"/" == journal.ReservedPrefix { // no tenant's prefix to suggest
				return journal.Invalid(field, reason+"give %s to mean them", p, journal.ReservedPrefix, journal.ReservedPrefix)
			}
			return journal.Invalid(field, reason+"give %q for a tenant's, or %s to mean herald's", p, journal.ReservedPrefix, p+"/", journal.ReservedPrefix)
		}
	}
	return nil
}

// TokenUseGrain is how often a token's LastUsed is written: a request at
// most every minute per token writes, the others only read.
const TokenUseGrain = time.Minute

// ErrNoToken is TokenByHash's error for a hash no token has.
var ErrNoToken = fmt.Errorf("token: %w", journal.ErrNotFound)

// TokenNotFound is the error of token id that does not exist.
func TokenNotFound(id string) error {
	return fmt.Errorf("token %s: %w", journal.Quoted(id), journal.ErrNotFound)
}

// TokenStore keeps tokens. Every store implements it.
type TokenStore interface {
	// CreateToken stores t, after ValidateToken. Errors: journal.ErrInvalid
	// (a field), journal.ErrConflict (its id or hash is stored already).
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash returns the token, revoked or not, whose secret has the
	// SHA-256 hash. Errors: journal.ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
	// Tokens returns every token, revoked ones too, oldest first (by
	// Created, then ID).
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes token id at at (a revoked one keeps its first
	// instant) and returns it. Errors: journal.ErrNotFound.
	RevokeToken(ctx context.Context, id string, at time.Time) (Token, error)
	// TokenUsed sets token id's LastUsed to at, unless it is later already.
	// An unknown id is no error.
	TokenUsed(ctx context.Context, id string, at time.Time) error
}

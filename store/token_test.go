package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/store"
)

// A scope that covers herald/ unsaid is refused with what to give
// instead: its own prefix and a slash for a tenant's, unless that is
// herald/ itself, which is herald's, never a tenant's.
func TestAScopeCoveringHeraldsStreamsSuggestsNoTenantPrefixUnderHerald(t *testing.T) {
	for scope, want := range map[string]string{
		"h":      `"h" covers herald's own streams (herald/…), whose events are every tenant's: give "h/" for a tenant's, or herald/ to mean herald's`,
		"herald": `"herald" covers herald's own streams (herald/…), whose events are every tenant's: give herald/ to mean them`,
	} {
		err := store.ValidateToken(store.Token{ID: "tok_0123456789abcdef", Name: "t", Role: store.RoleReader,
			Hash: make([]byte, 32), Created: time.Unix(1, 0), Scope: []string{scope}})
		require.EqualError(t, err, "invalid scope[0]: "+want)
	}
}

// A token's name says who holds it in every list: one of white space
// alone would show as a blank, so it is refused, naming the field.
func TestATokenNamedWithWhiteSpaceAloneIsRefused(t *testing.T) {
	for _, name := range []string{" ", "\u3000 \u00a0"} {
		err := store.ValidateToken(store.Token{ID: "tok_0123456789abcdef", Name: name, Role: store.RoleReader,
			Hash: make([]byte, 32), Created: time.Unix(1, 0)})
		require.EqualError(t, err, "invalid name: is only white space: name who holds the token, as lists show it")
	}
}

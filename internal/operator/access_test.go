package operator_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
)

// TestREADMEHasTheAccessTable: README's table of roles is AccessTable's
// output, so that the docs say what the handlers check.
func TestREADMEHasTheAccessTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), operator.AccessTable()),
		"README.md's table under \"Tokens, roles and scopes\" is not operator.AccessTable(); paste it:\n%s", operator.AccessTable())
}

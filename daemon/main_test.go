package daemon

import (
	"testing"

	"github.com/heraldpush/herald/internal/pgtest"
)

// TestMain starts a throwaway PostgreSQL for the tests that append to one.
func TestMain(m *testing.M) { pgtest.Main(m) }

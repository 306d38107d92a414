package pgtest

import (
	"path/filepath"
	"testing"
)

func TestPgCtlIsFound(t *testing.T) {
	p, err := pgCtlPath()
	if err != nil || filepath.Base(p) != "pg_ctl" {
		t.Fatalf("pgCtlPath() = %q, %v; want a pg_ctl", p, err)
	}
}

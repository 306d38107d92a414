package corpustest_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldpush/herald/internal/corpustest"
)

// fatalTB records a Fatalf instead of ending the test, to check that Dir
// fails rather than skips.
type fatalTB struct {
	testing.TB
	fatal, skipped string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}
func (f *fatalTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	panic(f)
}

func dir(t *testing.T, sub string) (got string, tb *fatalTB) {
	tb = &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil && r != any(tb) {
			panic(r)
		}
	}()
	return corpustest.Dir(tb, sub), tb
}

// Without HERALD_CORPUS the tests read the project's own input.
func TestDirDefaultsToTestdata(t *testing.T) {
	t.Setenv(corpustest.Env, "")
	got, tb := dir(t, "github")
	if tb.fatal != "" || tb.skipped != "" {
		t.Fatalf("Dir failed: %s%s", tb.fatal, tb.skipped)
	}
	if want := filepath.Join(corpustest.Repo(t), "testdata", "corpus", "github"); got != want {
		t.Fatalf("Dir = %s, want %s", got, want)
	}
	if corpustest.Shared() {
		t.Fatal("Shared with HERALD_CORPUS empty")
	}
}

// HERALD_CORPUS set but unreadable fails the test, naming the variable.
func TestDirFailsOnAnUnreadableCorpus(t *testing.T) {
	t.Setenv(corpustest.Env, filepath.Join(t.TempDir(), "missing"))
	_, tb := dir(t, "github")
	if tb.skipped != "" || !strings.Contains(tb.fatal, "HERALD_CORPUS is set") {
		t.Fatalf("Dir: fatal %q, skipped %q; want a failure naming HERALD_CORPUS", tb.fatal, tb.skipped)
	}
}

// A relative HERALD_CORPUS is taken from the repository's root, whatever
// the package's directory.
func TestDirRelativeToTheRepository(t *testing.T) {
	t.Setenv(corpustest.Env, "testdata/corpus")
	got, tb := dir(t, "a2a")
	if tb.fatal != "" {
		t.Fatal(tb.fatal)
	}
	if want := filepath.Join(corpustest.Repo(t), "testdata", "corpus", "a2a"); got != want || !corpustest.Shared() {
		t.Fatalf("Dir = %s (shared %t), want %s", got, corpustest.Shared(), want)
	}
}

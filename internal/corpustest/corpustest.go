// Package corpustest says which input directory the tests over real-world
// input read. By default it is testdata/corpus, small inputs herald's
// developers wrote, so that `go test ./...` passes on a fresh clone. When
// the environment variable HERALD_CORPUS names a directory in the same
// layout (CI sets it to ../shared/corpus, other people's data, read where it
// lies), the same tests read that instead; if it is set but unreadable they
// fail, never skip. Only tests import it.
package corpustest

import (
	"os"
	"path/filepath"
	"testing"
)

// Env is the environment variable that names the shared corpus. A relative
// path is taken from the repository's root (the directory of go.mod), since
// `go test` runs each package in its own directory.
const Env = "HERALD_CORPUS"

// Dir returns the directory sub (e.g. "github", "a2a"; "" for the whole
// input) of the input the corpus tests read: $HERALD_CORPUS when it is set,
// else testdata/corpus. It fails the test when that directory cannot be
// read.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	base, shared := root(t)
	dir := filepath.Join(base, sub)
	if _, err := os.ReadDir(dir); err != nil {
		if shared {
			t.Fatalf("%s is set but its %q cannot be read: %v (unset it to run on testdata/corpus)", Env, sub, err)
		}
		t.Fatalf("the project's own corpus input cannot be read: %v", err)
	}
	return dir
}

// Shared reports whether the tests read the shared corpus ($HERALD_CORPUS),
// so that a test may ask more of it (its size, one of its files) than of
// testdata/corpus.
func Shared() bool { return os.Getenv(Env) != "" }

func root(t testing.TB) (dir string, shared bool) {
	t.Helper()
	repo := Repo(t)
	if v := os.Getenv(Env); v != "" {
		if !filepath.IsAbs(v) {
			v = filepath.Join(repo, v)
		}
		return v, true
	}
	return filepath.Join(repo, "testdata", "corpus"), false
}

// Repo returns the repository's root: the nearest directory at or above the
// test's working directory that holds go.mod.
func Repo(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

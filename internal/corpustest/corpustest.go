// Package corpustest says which input the corpus tests read: testdata/corpus,
// small inputs of herald's own, so that `go test ./...` passes on a fresh
// clone, or a directory of the same layout named by Env (CI: other people's
// data, read where it lies). Unreadable, they fail, never skip.
package corpustest

import (
	"os"
	"path/filepath"
	"testing"
)

// Env names the shared corpus (CI sets ../shared/corpus); a relative path is
// from the repository's root, as `go test` runs each package in its own.
const Env = "HERALD_CORPUS"

// Dir returns the directory sub ("github", "a2a"; "" for all) of the input
// the corpus tests read, and fails the test when it cannot be read.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	base := filepath.Join("testdata", "corpus")
	if v := os.Getenv(Env); v != "" {
		base = v
	}
	if !filepath.IsAbs(base) {
		base = filepath.Join(Repo(t), base)
	}
	dir := filepath.Join(base, sub)
	if _, err := os.ReadDir(dir); err != nil {
		if Shared() {
			t.Fatalf("%s is set but its %q cannot be read: %v (unset it to run on testdata/corpus)", Env, sub, err)
		}
		t.Fatalf("the project's own corpus input cannot be read: %v", err)
	}
	return dir
}

// Shared reports whether the tests read the shared corpus ($HERALD_CORPUS),
// of which a test may ask more (its size, one of its files).
func Shared() bool { return os.Getenv(Env) != "" }

// Repo returns the repository's root: the nearest directory at or above the
// working directory that holds go.mod.
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

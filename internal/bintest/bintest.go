// Package bintest builds the herald command and runs it as a user does,
// for the tests of the binary. Only tests import it.
package bintest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build compiles the herald command into dir and returns the binary's
// path; its error holds what the compiler printed.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "herald")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/heraldpush/herald/cmd/herald").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build herald: %v\n%s", err, out)
	}
	return bin, nil
}

// Run runs cmd to its end with stdin as its input and returns what it
// printed and its exit code. It fails tb only when cmd could not run.
func Run(tb testing.TB, cmd *exec.Cmd, stdin string) (stdout, stderr string, code int) {
	tb.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatalf("run %s: %v", strings.Join(cmd.Args, " "), err)
	}
	return out.String(), errb.String(), code
}

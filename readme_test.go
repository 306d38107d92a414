package herald_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// block is one fenced code block of README.md and the marker before it.
type block struct {
	line   int    // 1-based line of the opening fence
	lang   string // "sh", "go", …
	marker string // "runnable", "runnable: repo", "compiles" or ""
	code   string
}

// readmeBlocks parses README.md's fenced code blocks. A block is marked by
// an HTML comment on the line before its fence: <!-- runnable --> (run in a
// scratch directory with the herald binary on PATH), <!-- runnable: repo -->
// (run at the repository root), or <!-- compiles --> (Go that must build).
func readmeBlocks(t *testing.T) []block {
	t.Helper()
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var (
		out    []block
		cur    *block
		marker string
		n      int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{line: n, lang: strings.TrimPrefix(line, "```"), marker: marker}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
		if cur == nil && strings.HasPrefix(line, "<!-- ") && strings.HasSuffix(line, " -->") {
			marker = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- "), " -->")
		} else if cur == nil && strings.TrimSpace(line) != "" {
			marker = ""
		}
	}
	require.Nil(t, cur, "README.md has an unclosed code block")
	return out
}

// TestREADMEFirstScreen: the README's first two commands are the demo and
// the test command, ./test.sh (which installs what the tests need), and
// .ci/run runs that command (with flags of its own, such as -race).
func TestREADMEFirstScreen(t *testing.T) {
	var sh []block
	for _, b := range readmeBlocks(t) {
		if b.lang == "sh" {
			sh = append(sh, b)
		}
	}
	require.GreaterOrEqual(t, len(sh), 2)
	require.Equal(t, "go run ./cmd/herald demo\n", sh[0].code)
	require.Equal(t, "runnable: repo", sh[0].marker, "the demo command is run by TestREADMECommands")
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	require.NoError(t, err)
	testCommand := strings.TrimSpace(sh[1].code)
	require.Equal(t, "./test.sh", testCommand, "the second command runs the tests")
	fi, err := os.Stat("test.sh")
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o111, "test.sh is executable, as the README runs it")
	runs := false
	for _, line := range strings.Split(string(ci), "\n") {
		runs = runs || line == testCommand || strings.HasPrefix(line, testCommand+" ")
	}
	require.True(t, runs, ".ci/run runs the README's test command, %s, on a line of its own", testCommand)
}

// TestCIFuzzesEveryTarget: README's Layout says .ci/run runs a short fuzz
// of every target; its list names each Fuzz function of the module's tests,
// and nothing else, and RELIABILITY.md's Fuzzing table names each too.
func TestCIFuzzesEveryTarget(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(ci), "<<'TARGETS'\n")
	require.True(t, ok, ".ci/run lists its fuzz targets in a TARGETS here-document")
	list, _, ok = strings.Cut(list, "\nTARGETS\n")
	require.True(t, ok)
	listed := strings.Fields(list)
	require.Zero(t, len(listed)%2, "each line of .ci/run's TARGETS is a package and a target")
	var inCI []string
	for i := 0; i < len(listed); i += 2 {
		inCI = append(inCI, listed[i]+" "+listed[i+1])
	}
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	var found []string
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "bench") {
			return filepath.SkipDir // bench is a module of its own
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzz.FindAllStringSubmatch(string(src), -1) {
			found = append(found, "./"+filepath.ToSlash(filepath.Dir(path))+" "+m[1])
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, found)
	require.ElementsMatch(t, found, inCI, ".ci/run's TARGETS against the Fuzz functions of *_test.go")
	// RELIABILITY.md's Fuzzing table says what outside input each fuzzes.
	rel, err := os.ReadFile("RELIABILITY.md")
	require.NoError(t, err)
	_, table, _ := strings.Cut(string(rel), "## Fuzzing\n")
	table, _, _ = strings.Cut(table, "\n## ")
	var inTable []string
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 4 || !strings.Contains(cells[2], "`Fuzz") {
			continue
		}
		// "projection/a2a, activitypub, cloudevents": the first names the folder.
		pkgs := strings.Split(strings.TrimSpace(cells[1]), ", ")
		dir, _ := filepath.Split(pkgs[0])
		for i, pkg := range pkgs {
			if i > 0 {
				pkg = dir + pkg
			}
			for _, m := range regexp.MustCompile("`(Fuzz\\w+)`").FindAllStringSubmatch(cells[2], -1) {
				inTable = append(inTable, "./"+pkg+" "+m[1])
			}
		}
	}
	require.ElementsMatch(t, found, inTable, "RELIABILITY.md's Fuzzing table against the Fuzz functions of *_test.go")
}

// TestREADMECommands runs every block marked runnable, in order, as a user
// would: the scratch blocks share one directory (and so one ./herald.db).
func TestREADMECommands(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "herald"), "./cmd/herald")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build herald: %s", out)
	scratch := t.TempDir()
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + scratch}
	// HOME is a scratch directory, so that herald finds nothing of the
	// user's; keep Go's caches where they are, or `go run` in a block
	// would download and build every module afresh (minutes, and the
	// network).
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	require.NoError(t, err)
	for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if v := strings.Split(strings.TrimSpace(string(goenv)), "\n"); i < len(v) && os.Getenv(name) == "" {
			env = append(env, name+"="+v[i])
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "HOME" && k != "HERALD_DATABASE_URL" {
			env = append(env, kv)
		}
	}
	ran := 0
	for _, b := range readmeBlocks(t) {
		if !strings.HasPrefix(b.marker, "runnable") {
			continue
		}
		require.Equal(t, "sh", b.lang, "README.md:%d: a runnable block is sh", b.line)
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.code)
		cmd.Dir = scratch
		if b.marker == "runnable: repo" {
			cmd.Dir = root
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "README.md:%d:\n%s\n---\n%s", b.line, b.code, out)
		require.NotContains(t, string(out), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "README.md:%d printed a secret", b.line)
		ran++
	}
	require.GreaterOrEqual(t, ran, 4)

	// The guide's last block leaves the registration unparked at the skipped
	// cursor's replay: check the JSON it printed says so.
	cmd := exec.Command(filepath.Join(bin, "herald"), "registrations", "--stream", "orders/1001", "--json")
	cmd.Dir, cmd.Env = scratch, env
	out, err = cmd.Output()
	require.NoError(t, err)
	var regs []struct {
		ID      string `json:"id"`
		NextSeq uint64 `json:"next_seq"`
		Head    uint64 `json:"head"`
		Parked  bool   `json:"parked"`
	}
	require.NoError(t, json.Unmarshal(out, &regs))
	require.Len(t, regs, 1)
	require.Equal(t, "billing", regs[0].ID)
	require.False(t, regs[0].Parked)
	require.Equal(t, uint64(1), regs[0].NextSeq)
	require.Equal(t, uint64(2), regs[0].Head)
}

// TestREADMEGoCompiles builds every Go block marked compiles, as a main
// package inside this module (through an overlay: nothing is written into
// the repository).
func TestREADMEGoCompiles(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	n := 0
	for _, b := range readmeBlocks(t) {
		if b.marker != "compiles" {
			continue
		}
		require.Equal(t, "go", b.lang, "README.md:%d", b.line)
		dir := t.TempDir()
		src := filepath.Join(dir, "main.go")
		require.NoError(t, os.WriteFile(src, []byte(b.code), 0o600))
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "internal", "readmeexample", "main.go"): src}})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o600))
		cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, "./internal/readmeexample")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "README.md:%d does not build:\n%s", b.line, out)
		n++
	}
	require.Positive(t, n)
}

// TestPointersToREADMENameItsPlaces: a pointer such as `README, "Rate"` in a
// help text, a package doc or the OpenAPI document names a heading of the
// README or a paragraph's bold title ("**Retention**:"), so that a renamed
// section cannot leave a pointer to nowhere.
func TestPointersToREADMENameItsPlaces(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	pointer := regexp.MustCompile(`README(?:\.md)?,? \(?"([^"]+)"`)
	joined := regexp.MustCompile(`\s*\n\s*(?://\s*)?`) // a pointer may run over lines of a comment or a string
	n := 0
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_test.go") || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".md")) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range pointer.FindAllStringSubmatch(joined.ReplaceAllString(string(src), " "), -1) {
			heading := regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(m[1]) + `$`)
			title := regexp.MustCompile(`\*\*` + regexp.QuoteMeta(m[1]) + `(\*\*[:.]|[:.]\*\*)`) // "**Retention**:", "**Producers' grants.**"
			require.True(t, heading.Match(readme) || title.Match(readme),
				"%s points to README, %q, which has no such heading", path, m[1])
			n++
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, n, 20, "the walk found the pointers")
}

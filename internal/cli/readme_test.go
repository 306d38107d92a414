package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// readmeMentions is every command line the README shows: each inline code
// span, and each line of its sh code blocks, with its 1-based line.
func readmeMentions(t *testing.T) (readme string, spans []readmeSpan) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	inBlock, sh := false, false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock, sh = !inBlock, line == "```sh"
			continue
		}
		if inBlock {
			if sh {
				spans = append(spans, readmeSpan{i + 1, line})
			}
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			spans = append(spans, readmeSpan{i + 1, m[1]})
		}
	}
	return string(data), spans
}

type readmeSpan struct {
	line int
	text string
}

// TestREADMENamesOnlyCommandsAndFlagsThatExist: every `herald CMD --flag`
// the README shows (in code, or a span that starts with a command's name)
// names a command herald has and a flag of that command, so that a renamed
// flag cannot leave the guide behind. What exists and the README leaves
// out is in each command's --help, which the README points to.
func TestREADMENamesOnlyCommandsAndFlagsThatExist(t *testing.T) {
	root := newRoot(&env{getenv: func(string) string { return "" }})
	_, spans := readmeMentions(t)
	checked := 0
	for _, s := range spans {
		words := strings.Fields(s.text)
		for i := 0; i < len(words); i++ {
			start := i + 1
			if words[i] != "herald" {
				// A span of the guide's tables: "register --kinds".
				if i != 0 || len(words) < 2 || !strings.HasPrefix(words[1], "--") || strings.Contains(s.text, "\n") {
					continue
				}
				if c, _, err := root.Find(words[:1]); err != nil || c == root {
					continue
				}
				start = 0
			}
			if start >= len(words) || !regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(words[start]) {
				continue
			}
			for _, alt := range strings.Split(words[start], "|") {
				path := append([]string{alt}, words[start+1:]...)
				c, rest, err := root.Find(path)
				require.NoError(t, err, "README.md:%d: %q", s.line, s.text)
				require.NotEqual(t, root, c, "README.md:%d: herald has no command %q", s.line, alt)
				for _, w := range rest {
					if w == "|" || w == "||" || w == "&&" || w == ";" || strings.HasPrefix(w, "#") || strings.HasPrefix(w, "`") {
						break
					}
					if !strings.HasPrefix(w, "--") {
						continue
					}
					name, _, _ := strings.Cut(strings.Trim(strings.TrimPrefix(w, "--"), "[]),.;:"), "=")
					c.InitDefaultHelpFlag() // cobra adds --help when it runs
					require.NotNil(t, c.Flag(name), "README.md:%d: %s has no flag --%s (%q)", s.line, c.CommandPath(), name, s.text)
					checked++
				}
			}
		}
	}
	require.Greater(t, checked, 100, "the walk found the README's flags")
}

// TestREADMEDefaultsAreTheFlags: a default the README states beside a flag,
// "`--max-per-host` (4)", is the flag's own, in every command that has the
// flag. --help says it too (it must stand alone); the README's copy is
// held to it here.
func TestREADMEDefaultsAreTheFlags(t *testing.T) {
	root := newRoot(&env{getenv: func(string) string { return "" }})
	defaults := map[string][]string{} // flag name: its default in each command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { defaults[f.Name] = append(defaults[f.Name], f.DefValue) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	readme, _ := readmeMentions(t)
	// "`--every` (1 s)", "`--metrics-addr` (`127.0.0.1:9464`)", "`--lease`, 6 s",
	// "`--retain`, default 7 days", "`--max-retry-after`] (1 h".
	stated := regexp.MustCompile("`--([a-z-]+)`\\]?(?: \\(|, (?:default )?)`?([0-9][0-9.:]*(?: ?(?:ms|s|min|h|days|MiB)\\b)?)")
	n := 0
	for _, m := range stated.FindAllStringSubmatch(readme, -1) {
		name, value := m[1], m[2]
		defs, ok := defaults[name]
		require.True(t, ok, "README states a default of --%s, a flag herald does not have", name)
		for _, def := range defs {
			require.True(t, sameDefault(value, def), "README says --%s defaults to %s; the flag's default is %s", name, value, def)
		}
		n++
	}
	require.GreaterOrEqual(t, n, 10, "the README's stated defaults were found")
}

// sameDefault compares a README value ("1 s", "1 MiB", "7 days", "256",
// "127.0.0.1:9464") with a flag's DefValue ("1s", "1048576", "7d", "256").
func sameDefault(readme, def string) bool {
	if readme == def {
		return true
	}
	num, unit, _ := strings.Cut(strings.Replace(readme, " ", "", 1)+" ", " ")
	unit = strings.TrimLeft(num, "0123456789.")
	num = strings.TrimSuffix(num, unit)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return false
	}
	if unit == "MiB" {
		return def == strconv.Itoa(int(v*(1<<20)))
	}
	per := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "days": 24 * time.Hour}[unit]
	if per == 0 {
		return false
	}
	want := time.Duration(v * float64(per))
	if d, err := time.ParseDuration(def); err == nil {
		return d == want
	}
	if days, ok := strings.CutSuffix(def, "d"); ok {
		n, err := strconv.Atoi(days)
		return err == nil && time.Duration(n)*24*time.Hour == want
	}
	return false
}

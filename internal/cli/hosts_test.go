package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/hostseed"
	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/push"
)

var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

// hostile is a receiver's text as a host-level failure may carry it.
const hostile = hostseed.Hostile

// downHostDB: down.example:443 down with two registrations held (hostseed).
func downHostDB(t *testing.T) string { return hostseed.DownHostDB(t, t0) }

func runHostsCLI(t *testing.T, db string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"--database", "sqlite:" + db}, args...),
		Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestHostsCommand(t *testing.T) {
	db := downHostDB(t)

	code, out, errOut := runHostsCLI(t, db, "hosts")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "down.example:443")
	require.Contains(t, out, "down")
	require.NotContains(t, out, "\x1b", "a receiver's escape sequence never reaches the terminal")
	require.Contains(t, out, "owned second line", "the last error is shown, on one line")
	require.Equal(t, 2, strings.Count(out, "\n"), "a header and one row: the line break was flattened")

	code, out, _ = runHostsCLI(t, db, "hosts", "--json")
	require.Equal(t, ExitOK, code)
	var hosts []push.Host
	require.NoError(t, json.Unmarshal([]byte(out), &hosts))
	require.Len(t, hosts, 1)
	h := hosts[0]
	require.Equal(t, "down.example:443", h.Host)
	require.Equal(t, push.HostDown, h.State)
	require.Equal(t, 3, h.Failures)
	require.Equal(t, 2, h.Held, "a and b are held")
	require.True(t, h.Since.Equal(t0.Add(2*time.Minute)))
	require.True(t, h.NextProbeAt.Equal(h.Since.Add(push.ProbeDelay(h.Host, 0))))
	require.Equal(t, hostile, h.LastError, "JSON keeps the text, escaped by the encoding")

	code, out, _ = runHostsCLI(t, db, "registrations", "--json")
	require.Equal(t, ExitOK, code)
	var regs []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(out), &regs))
	require.Len(t, regs, 3)
	for _, v := range regs {
		if v.Host == "down.example:443" {
			require.Equal(t, "held", v.State, v.ID)
			require.Equal(t, push.HostDown, v.HeldFor, v.ID)
		} else {
			require.NotEqual(t, "held", v.State, "%s is on a host that is up", v.ID)
		}
	}
	code, out, _ = runHostsCLI(t, db, "registrations")
	require.Equal(t, ExitOK, code)
	require.Equal(t, 2, strings.Count(out, "held: host down"), "the table says why they are held")

	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "Hosts: 1 down, 0 unavailable, 2 registrations held for them")
	require.NotContains(t, out, "\x1b")
	code, out, _ = runHostsCLI(t, db, "status", "--json")
	require.Equal(t, ExitOK, code)
	var st struct {
		Namespaces map[string]operator.NamespaceView `json:"namespaces"`
		Hosts      operator.HostSummary              `json:"hosts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, 1, st.Hosts.Down)
	require.Equal(t, 2, st.Hosts.Held)
	require.Len(t, st.Hosts.NotUp, 1)
	// a and b are counted held, not ready (found by a newcomer: status
	// counted them ready while its own lags said held); c is ready.
	wh := st.Namespaces["webhook"]
	require.Equal(t, 2, wh.Held, "%+v", wh)
	require.Equal(t, 1, wh.Ready+wh.Retrying, "%+v", wh)
	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.Regexp(t, `(?m)^NAMESPACE +READY +RETRYING +HELD .*\n^webhook +1 +0 +2 `, out)

	code, _, errOut = runHostsCLI(t, db, "hosts", "--state", "sideways")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--state")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "HOST")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "unknown.example:443")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "herald hosts --database sqlite:"+db+" lists")

	code, out, errOut = runHostsCLI(t, db, "hosts", "reset", "https://DOWN.example/inbox", "--at", "2026-03-15T12:00:00Z", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var reset struct {
		Released int       `json:"released"`
		Host     push.Host `json:"host"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &reset))
	require.Equal(t, 2, reset.Released)
	require.Equal(t, push.HostUp, reset.Host.State)
	require.True(t, reset.Host.Since.Equal(time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)))
	code, out, _ = runHostsCLI(t, db, "status")
	require.Equal(t, ExitOK, code)
	require.NotContains(t, out, "Hosts:", "no host is down any more")
	require.Regexp(t, `(?m)^webhook +3 +0 +0 `, out, "released: all three ready")
	code, out, _ = runHostsCLI(t, db, "registrations")
	require.Equal(t, ExitOK, code)
	require.NotContains(t, out, "held", "released")

	// Again: it is up with no failures; nothing to reset, and it says so.
	code, out, errOut = runHostsCLI(t, db, "hosts", "reset", "down.example:443")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "down.example:443 was up with no failures; nothing changed.\n", out)
	// A host named without its port is named with it in the hint.
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "down.example")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "a host is host:port, as herald hosts lists it (down.example:443 for https)")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "a:1", "b:2")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "takes one HOST (host:port, as herald hosts lists it), not 2")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "HOST is empty")
	code, _, errOut = runHostsCLI(t, db, "hosts", "reset", "::1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "([::1]:443 for https)")
}

func TestHostHorizonFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	for _, args := range [][]string{
		{"sweep", "--namespace", "webhook", "--host-horizon", "59m"},
		{"sweep", "--namespace", "webhook", "--host-horizon", "8761h"},
		{"run", "--host-horizon", "1s"},
	} {
		code, _, errOut := runHostsCLI(t, db, args...)
		require.Equal(t, ExitUsage, code, "%v", args)
		require.Contains(t, errOut, "--host-horizon", "%v", args)
	}
	heraldOK(t, db, "", "migrate", "up") // a sweep serves a database that exists
	code, _, errOut := runHostsCLI(t, db, "sweep", "--namespace", "webhook", "--host-horizon", "72h", "--json")
	require.Equal(t, ExitOK, code, errOut)
}

// With no host to show, herald hosts says why, in words that fit the filter.
func TestHostsSaysWhyNoneIsListed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "herald.db")
	heraldOK(t, db, "", "migrate", "up")
	code, out, errOut := runHostsCLI(t, db, "hosts")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "No host has failed: herald keeps health only for hosts that have.\n", out)
	code, out, errOut = runHostsCLI(t, db, "hosts", "--state", "down")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "No host is down.\n", out)
}

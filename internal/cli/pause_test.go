package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

// pause stops deliveries, shown as paused with who and why; resume delivers
// again from the cursor; unpark leaves a pause alone.
func TestPauseAndResume(t *testing.T) {
	db := newDB(t)
	srv := answering(t, http.StatusOK)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", srv.URL, "--secret", goodSecret)
	heraldOK(t, db, "{}", "append", "--stream", "s", "--id", "e1", "--kind", "k")
	require.Equal(t, "Paused stream=s id=r at cursor 1: herald resume delivers again.\n",
		heraldOK(t, db, "", "pause", "--stream", "s", "--id", "r", "--by", "alice", "--reason", "billing's maintenance", "--at", "2026-03-15T11:00:00Z"))
	require.Contains(t, heraldOK(t, db, "", "pause", "--stream", "s", "--id", "r", "--by", "bob"), "already paused; nothing changed")
	sweep := func(at string) {
		r := runCLI(t, db, "", "sweep", "--namespace", "webhook", "--at", at, "--allow-http", "--allow-private-network")
		require.Contains(t, []int{ExitOK, ExitAttention}, r.code, r.stderr)
	}
	sweep("2026-03-15T11:01:00Z")
	var regs []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, store.StatePaused, regs[0].State)
	require.True(t, regs[0].Paused)
	require.Equal(t, uint64(1), regs[0].NextSeq, "a paused registration is not served")
	require.Equal(t, "paused by alice: billing's maintenance", regs[0].LastError)
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "r"), "paused by alice: billing's maintenance")
	require.Contains(t, heraldOK(t, db, "", "status"), "PAUSED")
	listed := heraldOK(t, db, "", "registrations", "--parked")
	require.Contains(t, listed, "paused")
	require.NotContains(t, listed, "parked", "a paused registration's next attempt says paused, not parked")
	require.Contains(t, heraldOK(t, db, "", "unpark", "--stream", "s", "--id", "r"), "was not parked; nothing changed")

	r := runCLI(t, db, "", "pause", "--stream", "s", "--id", "r", "--reason", "a\nb")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--reason")
	r = runCLI(t, db, "", "pause", "--stream", "s", "--id", "r", "--reason", strings.Repeat("a", 100000))
	require.Equal(t, ExitUsage, r.code, "a reason longer than evidence keeps")
	require.Contains(t, r.stderr, "invalid --reason: is longer than 2048 bytes (100000)")
	require.Less(t, len(r.stderr), 1024)
	require.Contains(t, heraldOK(t, db, "", "evidence", "--stream", "s", "--id", "r"), "paused by alice: billing's maintenance",
		"the refused pause changed nothing")

	require.Contains(t, heraldOK(t, db, "", "resume", "--stream", "s", "--id", "r", "--by", "bob", "--at", "2026-03-15T11:02:00Z"),
		"Resumed stream=s id=r: due now at cursor 1 (1 record to deliver).")
	sweep("2026-03-15T11:02:00Z")
	regs = nil
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.Equal(t, uint64(2), regs[0].NextSeq, "resumed, it delivered from its cursor")
	require.Contains(t, heraldOK(t, db, "", "resume", "--stream", "s", "--id", "r"), "was not paused; nothing changed")
}

// A pause takes effect at once: an --at ahead of the clock (the caller's
// clock may run ahead of this one, as sweep --at's may) only dates it, and
// the answer and --help say so; resume --at ahead is when it is due again.
func TestPauseAtAheadPausesAtOnce(t *testing.T) {
	db := newDB(t)
	heraldOK(t, db, "", "register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/x", "--secret", goodSecret)
	require.Contains(t, heraldOK(t, db, "", "pause", "--help"), "it takes effect at once, whatever the instant")
	require.Equal(t, "Paused stream=s id=r at cursor 1, at once (dated 2099-01-01 00:00:00Z): herald resume delivers again.\n",
		heraldOK(t, db, "", "pause", "--stream", "s", "--id", "r", "--at", "2099-01-01T00:00:00Z"))
	var regs []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--json")), &regs))
	require.True(t, regs[0].Paused, "paused now")
	require.Equal(t, "Resumed stream=s id=r: due from 2099-01-02 00:00:00Z at cursor 1 (0 records to deliver).\n",
		heraldOK(t, db, "", "resume", "--stream", "s", "--id", "r", "--at", "2099-01-02T00:00:00Z"))
}

// TestResumingARegistrationHeldForItsHostSaysItWaitsForTheProbe: resumed
// while its host is down, a registration is not due now: it waits for the
// host's next probe, and resume says so, in text and in --json.
func TestResumingARegistrationHeldForItsHostSaysItWaitsForTheProbe(t *testing.T) {
	db := downHostDB(t)
	probe := downHostOf(t, db).NextProbeAt
	require.False(t, probe.IsZero())

	heraldOK(t, db, "", "pause", "--stream", "orders", "--id", "a", "--at", "2026-03-15T11:02:01Z")
	require.Equal(t, "Resumed stream=orders id=a: at cursor 1 (1 record to deliver), held for host down.example:443 (down) until its next probe at "+operator.Instant(probe)+".\n",
		heraldOK(t, db, "", "resume", "--stream", "orders", "--id", "a", "--at", "2026-03-15T11:02:02Z"))

	heraldOK(t, db, "", "pause", "--stream", "orders", "--id", "a", "--at", "2026-03-15T11:02:03Z")
	var v operator.PauseView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "--json", "resume", "--stream", "orders", "--id", "a", "--at", "2026-03-15T11:02:04Z")), &v))
	require.True(t, v.Changed)
	require.Equal(t, operator.StateHeld, v.State)
	require.Equal(t, store.HostDown, v.HeldFor)
	require.Equal(t, probe, v.HostNextProbeAt)
}

// TestUnparkingAllSaysWhichWaitForTheirHostsProbe: unpark --all names, for
// each registration, when it is sent: due now, or held for its down host
// until the host's next probe, and its summary counts those held.
func TestUnparkingAllSaysWhichWaitForTheirHostsProbe(t *testing.T) {
	db := downHostDB(t)
	probe := downHostOf(t, db).NextProbeAt
	func() { // park the down host's probe, as a 410 to it would
		s, err := sqlite.Open(t.Context(), db)
		require.NoError(t, err)
		defer s.Close()
		batch, err := s.Due(t.Context(), store.DueQuery{At: probe, Limit: 10, Namespace: "webhook", Owner: "t", LeaseUntil: probe.Add(time.Second)})
		require.NoError(t, err)
		for _, st := range batch.Registrations {
			require.NoError(t, s.Park(t.Context(), st.Claim(), st.NextSeq, store.Evidence{At: probe, Status: http.StatusGone, Error: "gone"}))
		}
	}()
	var parked []operator.RegistrationView
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "registrations", "--parked", "--json")), &parked))
	require.Len(t, parked, 2, "the down host's probe and the up host's registration")

	out := heraldOK(t, db, "", "unpark", "--all", "--at", operator.Instant(probe.Add(time.Second)))
	next := downHostOf(t, db).NextProbeAt // the probe's claim moved it
	for _, v := range parked {
		if v.Host == "down.example:443" {
			require.Contains(t, out, "Unparked "+store.Name(v.Stream, v.ID)+": at cursor 1 (1 record to deliver), held for host down.example:443 (down) until its next probe at "+operator.Instant(next)+".\n")
		} else {
			require.Contains(t, out, "Unparked "+store.Name(v.Stream, v.ID)+": due now at cursor 1 (1 record to deliver).\n")
		}
	}
	require.Contains(t, out, "2 registrations unparked: 1 held for their hosts until their next probes, the others due now.\n")
}

// downHostOf returns the one host herald hosts lists in db, downHostDB's.
func downHostOf(t *testing.T, db string) store.Host {
	t.Helper()
	var hosts []store.Host
	require.NoError(t, json.Unmarshal([]byte(heraldOK(t, db, "", "hosts", "--json")), &hosts))
	require.Len(t, hosts, 1)
	return hosts[0]
}

// A skip, rewind or re-register of a paused registration tells the
// command that resumes it, herald resume: unpark, which they named, leaves
// a pause alone ("was not parked; nothing changed").
func TestAMovedPausedRegistrationNamesResumeNotUnpark(t *testing.T) {
	db := newDB(t)
	register := []string{"register", "--stream", "s", "--id", "r", "--namespace", "webhook", "--url", "https://r.example/", "--secret", goodSecret}
	heraldOK(t, db, "", register...)
	for _, id := range []string{"e1", "e2", "e3"} {
		heraldOK(t, db, "{}", "append", "--stream", "s", "--id", id, "--kind", "k")
	}
	heraldOK(t, db, "", "pause", "--stream", "s", "--id", "r")
	for _, args := range [][]string{
		{"skip", "--stream", "s", "--id", "r", "--to-seq", "3"},
		{"rewind", "--stream", "s", "--id", "r", "--to-seq", "1"},
		register,
	} {
		out := heraldOK(t, db, "", args...)
		require.Contains(t, out, "It is still paused: herald resume resumes it.", args)
		require.NotContains(t, out, "unpark", args)
	}
}

package main_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/pgtest"
)

// A journey through retention as an operator makes it: a parked
// registration holds records, prune --dry-run says what would go, prune
// removes what every cursor passed, streams shows the low-water mark, and a
// rewind below it is refused (exit 2) naming the oldest retained seq.
func testRetentionJourney(t *testing.T, db string) {
	h := newHerald(t, db)
	h.ok("migrate", "up")
	recv := newReceiver(t)
	for _, id := range []string{"ok", "down"} {
		h.ok("register", "--stream", "orders", "--id", id, "--namespace", "webhook", "--url", recv.URL+"/"+id, "--secret", secret)
	}
	for i := 1; i <= 4; i++ {
		r := h.run(fmt.Sprintf(`{"n":%d}`, i), "append", "--stream", "orders", "--id", fmt.Sprintf("o-%d", i), "--kind", "order")
		require.Equal(t, 0, r.code, r.stderr)
	}
	recv.answer("/down", 410)
	sweep(h, "2026-03-15T11:00:00Z", 3) // ok takes all four; down parks at #1
	require.True(t, get(h, "down").Parked)

	// Records are appended now (the store's clock); prune an hour later.
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.Contains(t, h.ok("prune", "--retain", "0s", "--at", later, "--dry-run"), fmt.Sprintf("Would prune %d record", told(h)),
		"the parked registration holds every record (herald's own events, the park's, may go)")
	h.ok("skip", "--stream", "orders", "--id", "down", "--to-seq", "3", "--reason", "lost cause", "--at", "2026-03-15T11:01:00Z")

	var dry struct {
		DryRun bool `json:"dry_run"`
		Report struct {
			Records int `json:"records"`
		} `json:"report"`
	}
	h.json(&dry, "prune", "--retain", "0s", "--at", later, "--dry-run")
	require.True(t, dry.DryRun)
	events := told(h)
	require.Equal(t, 2+events, dry.Report.Records, "#1 and #2: every cursor is past them now (and herald's own events)")
	// --at has whole seconds: two hours on, the appends are more than an
	// hour before it whatever the fraction of the second they fell in.
	twoHours := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	require.Contains(t, h.ok("prune", "--retain", "1h", "--at", twoHours), fmt.Sprintf("Pruned %d records", 2+events), "records appended over an hour before --at go")

	var streams []struct {
		Stream    string `json:"stream"`
		Head      uint64 `json:"head"`
		OldestSeq uint64 `json:"oldest_seq"`
		Records   uint64 `json:"records"`
	}
	h.json(&streams, "streams", "--stream", "orders")
	require.Len(t, streams, 1)
	require.Equal(t, uint64(4), streams[0].Head)
	require.Equal(t, uint64(3), streams[0].OldestSeq)
	require.Equal(t, uint64(2), streams[0].Records)
	require.Contains(t, h.ok("streams"), "orders")

	r := h.run("", "rewind", "--stream", "orders", "--id", "ok", "--to-seq", "1", "--at", "2026-03-15T11:02:00Z")
	require.Equal(t, 2, r.code, "a rewind below the low-water mark is bad input: %s", r.stderr)
	require.Contains(t, r.stderr, "#3", "it names the oldest retained seq")
	require.Equal(t, uint64(5), get(h, "ok").NextSeq, "and changes nothing")

	r = h.run("", "record-status", "--stream", "orders", "--seq", "1")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "was pruned")

	r = h.run("", "prune", "--retain", "a week")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--retain")
	r = h.run("", "prune", "--retain", "-1h")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--retain")
}

func TestRetentionJourneySQLite(t *testing.T) {
	testRetentionJourney(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
}

func TestRetentionJourneyPostgres(t *testing.T) {
	testRetentionJourney(t, pgtest.NewDatabase(t))
}

// told is how many of herald's own events (herald/events) are retained.
func told(h *herald) int {
	var streams []struct {
		Records int `json:"records"`
	}
	h.json(&streams, "streams", "--stream", "herald/events")
	if len(streams) == 0 {
		return 0
	}
	return streams[0].Records
}

// herald records says when more records exist past --limit (and the
// --from-seq that reads them), and when records it was asked for were
// pruned (the oldest kept seq), in words and in --json.
func TestRecordsSaysWhatThePageDoesNotShow(t *testing.T) {
	h := newHerald(t, "sqlite:"+filepath.Join(t.TempDir(), "herald.db"))
	for i := 1; i <= 5; i++ {
		r := h.run(`{}`, "append", "--stream", "orders/1", "--id", fmt.Sprintf("e%d", i), "--kind", "k")
		require.Equal(t, 0, r.code, r.stderr)
	}
	out := h.ok("records", "--stream", "orders/1", "--limit", "2")
	require.Contains(t, out, "More records up to #5: herald records --database "+h.db+" --stream orders/1 --from-seq 3 --limit 2\n")
	require.NotContains(t, out, "pruned")
	require.NotContains(t, h.ok("records", "--stream", "orders/1"), "More records", "the whole stream fits")

	// A registration whose cursor is 3 has acknowledged #1 and #2: prune them.
	h.ok("register", "--stream", "orders/1", "--id", "r", "--namespace", "webhook", "--url", "https://hooks.example/in",
		"--secret", secret, "--from-seq", "3")
	// An hour on: past --retain 0s, well within the registration's
	// retention bound (webhook: 90 days), which would take #3 to #5 too.
	h.ok("prune", "--retain", "0s", "--at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	out = h.ok("records", "--stream", "orders/1", "--limit", "2")
	require.Contains(t, out, "Records before #3 were pruned (retention): #3 is the oldest kept.\n")
	require.Contains(t, out, "More records up to #5: herald records --database "+h.db+" --stream orders/1 --from-seq 5 --limit 2\n")
	require.NotContains(t, out, "e1")

	var page struct {
		Stream      string `json:"stream"`
		Head        uint64 `json:"head"`
		OldestSeq   uint64 `json:"oldest_seq"`
		More        bool   `json:"more"`
		NextFromSeq uint64 `json:"next_from_seq"`
		Pruned      bool   `json:"pruned"`
		Records     []struct {
			Seq uint64 `json:"seq"`
		} `json:"records"`
	}
	h.json(&page, "records", "--stream", "orders/1", "--limit", "2")
	require.Equal(t, "orders/1", page.Stream)
	require.Equal(t, uint64(5), page.Head)
	require.Equal(t, uint64(3), page.OldestSeq)
	require.True(t, page.More)
	require.Equal(t, uint64(5), page.NextFromSeq)
	require.True(t, page.Pruned)
	require.Len(t, page.Records, 2)
	require.Equal(t, uint64(3), page.Records[0].Seq)

	h.json(&page, "records", "--stream", "orders/1", "--from-seq", "4")
	require.False(t, page.More, "#4 and #5 are all there is")
	require.False(t, page.Pruned, "nothing asked for was pruned")
	require.Len(t, page.Records, 2)
}

package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// TestPruneKeepsRefusedRecordsForTheRetentionAge: a record the sequencer
// refused (it committed after its stream's final record) stays for an
// operator to see for the retention age, and keeps its sealed stream from
// being removed; past the age both go.
func TestPruneKeepsRefusedRecordsForTheRetentionAge(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, migratedURL(t))
	late := openTx(t, s)
	_, err := s.AppendTx(ctx, late, "t", entry("t-late"))
	require.NoError(t, err)
	final := entry("t-end")
	final.Final = true
	_, err = s.Append(ctx, "t", final)
	require.NoError(t, err)
	require.NoError(t, late.Commit(ctx))
	_, err = s.Sequence(ctx)
	require.NoError(t, err)
	refused, err := s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Len(t, refused, 1)

	prune := func(at time.Time) store.PruneReport {
		var total store.PruneReport
		for {
			rep, err := s.Prune(ctx, store.PruneQuery{At: at, Retain: time.Hour})
			require.NoError(t, err)
			total = total.Add(rep)
			if !rep.More {
				return total
			}
		}
	}
	require.Zero(t, prune(time.Now()).Removed, "young: kept")
	refused, err = s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Len(t, refused, 1, "the refused record is still there to see")

	rep := prune(time.Now().Add(2 * time.Hour))
	require.Equal(t, 1, rep.Removed, "past the age, the sealed stream and its refused record go")
	refused, err = s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Empty(t, refused)
	infos, err := s.Streams(ctx, store.StreamQuery{Stream: "t"})
	require.NoError(t, err)
	require.Empty(t, infos)
}

// TestAppendAfterAPrunedFinalRecordIsRefusedBySequencer: the append's seal
// check looks for the stream's final record; once retention pruned it
// (every registration acknowledged it) while a younger refused record keeps
// the sealed stream, the sequencer refuses the append instead (package doc,
// "Sealing"): Append says ErrSealed with the final seq, and the record is
// never read.
func TestAppendAfterAPrunedFinalRecordIsRefusedBySequencer(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	s := openStore(t, migratedURL(t), postgres.WithClock(func() time.Time { return now }))
	final := entry("t-end")
	final.Final = true
	_, err := s.Append(ctx, "t", entry("t-1"), final)
	require.NoError(t, err)
	now = now.Add(2 * time.Hour)
	// A record that raced the final record and lost, inserted as the
	// racing transaction's check-passing statement would have.
	_, err = s.Pool().Exec(ctx, `INSERT INTO herald_record (stream, id, kind, content_type, payload, final, digest, appended_at)
VALUES ('t', 't-raced', 'k', 'application/json', '{}', false, '\x00', $1)`, now)
	require.NoError(t, err)
	require.Equal(t, 1, sequence(t, s))
	rep, err := s.Prune(ctx, store.PruneQuery{At: now.Add(30 * time.Minute), Retain: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Records, "the final record went; the young refused one stays")
	infos, err := s.Streams(ctx, store.StreamQuery{Stream: "t"})
	require.NoError(t, err)
	require.Len(t, infos, 1, "the refused record keeps the stream")

	_, err = s.Append(ctx, "t", entry("t-after"))
	var se *journal.SealedError
	require.ErrorAs(t, err, &se)
	require.Equal(t, uint64(2), se.FinalSeq)
	refused, err := s.Refused(ctx, "t", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"t-raced", "t-after"}, []string{refused[0].ID, refused[1].ID})
	recs, err := s.Read(ctx, "t", 1, 10, 0)
	require.NoError(t, err)
	require.Empty(t, recs, "nothing after the pruned final record is read")
}

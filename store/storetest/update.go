package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

var updateTests = []test{
	testAnUpdateOverUnchangedSettingsApplies, testAnUpdateOverChangedSettingsIsRefused, testAnUpdateNeedsTheRegistrationItRead,
	testAnUpdateOverNoneCreatesOnlyWhileNoneExists,
}

// testAnUpdateOverUnchangedSettingsApplies: Update applies over a
// registration whose settings are still those read, though its cursor,
// retry state, lease and pause moved since: they are not settings, and the
// update keeps them as Register does.
func testAnUpdateOverUnchangedSettingsApplies(t *testing.T, b Backend) {
	streamWithReg(t, b, 5)
	was := get(t, b, "s", "r").Registration
	require.NoError(t, b.Retry(t.Context(), claim(t, b, "s", "r", at(0)), 3, at(10), store.Evidence{At: at(0), Event: store.EventFailed, Error: "503"}))
	require.NoError(t, b.Pause(t.Context(), "s", "r", at(1), "ops", "maintenance"))
	r := was
	r.Config, r.Rate, r.RetainMax = store.Config(`{"secret":"n3w"}`), store.Rate{Count: 5, Per: time.Second}, 2*time.Hour
	got, err := b.Update(t.Context(), r, was)
	require.NoError(t, err)
	require.Equal(t, `{"secret":"n3w"}`, string(got.Config))
	st := get(t, b, "s", "r")
	require.Equal(t, `{"secret":"n3w"}`, string(st.Config), "the update is stored")
	require.Equal(t, store.Rate{Count: 5, Per: time.Second}, st.Rate)
	require.Equal(t, 2*time.Hour, st.RetainMax)
	require.Equal(t, uint64(3), st.NextSeq, "the cursor moved since the read is kept")
	require.Equal(t, 1, st.Attempts)
	require.True(t, st.Paused, "and the pause")

	again := r
	again.URL = "https://moved.example/r"
	_, err = b.Update(t.Context(), again, got)
	require.NoError(t, err, "the registration Update returned is what it stored: a next update over it applies")
	require.Equal(t, "https://moved.example/r", get(t, b, "s", "r").URL)
}

// settingChanges change one setting of a registration each, by its field's
// name, as another process's update would: an Update or Subscribe over what
// was read before must see it.
var settingChanges = map[string]func(r *store.Registration){
	"url":         func(r *store.Registration) { r.URL = "https://other.example/x" },
	"namespace":   func(r *store.Registration) { r.Namespace = "cloudevents" },
	"config":      func(r *store.Registration) { r.Config = store.Config(`{"secret":"rotated"}`) },
	"on_rejected": func(r *store.Registration) { r.OnRejected = store.RejectSkip },
	"kinds":       func(r *store.Registration) { r.Kinds = []string{"a.*"} },
	"window":      func(r *store.Registration) { r.Window = 4 },
	"retain_max":  func(r *store.Registration) { r.RetainMax = 3 * time.Hour },
	"retry":       func(r *store.Registration) { r.Retry = store.RetryPolicy{MaxAttempts: 7} },
	"rate":        func(r *store.Registration) { r.Rate = store.Rate{Count: 9, Per: time.Minute} },
}

// testAnUpdateOverChangedSettingsIsRefused: Update over a registration
// whose settings changed since was, any one of them, is refused with
// ErrConflict naming it, and changes nothing: what changed it stays.
func testAnUpdateOverChangedSettingsIsRefused(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	for name, change := range settingChanges {
		register(t, b, reg("s", name, "webhook"))
		was := get(t, b, "s", name).Registration
		other := was
		change(&other)
		register(t, b, other) // another process's update, after the read
		before := get(t, b, "s", name)

		r := was
		r.Rate = store.Rate{Count: 1, Per: time.Hour}
		_, err := b.Update(t.Context(), r, was)
		require.ErrorIs(t, err, journal.ErrConflict, "%s changed since the read", name)
		require.ErrorContains(t, err, store.Name("s", name), "the error names the registration")
		require.Equal(t, before, get(t, b, "s", name), "%s: a refused update changes nothing", name)
	}
}

// testAnUpdateNeedsTheRegistrationItRead: Update over a registration read
// never creates: over one gone since the read it is ErrNotFound and stores
// nothing; was naming another registration, or r invalid, is ErrInvalid.
func testAnUpdateNeedsTheRegistrationItRead(t *testing.T, b Backend) {
	streamWithReg(t, b, 1)
	was := get(t, b, "s", "r").Registration
	require.NoError(t, b.Unregister(t.Context(), "s", "r"))
	_, err := b.Update(t.Context(), was, was)
	require.ErrorIs(t, err, journal.ErrNotFound)
	require.ErrorIs(t, errOf(b.Get(t.Context(), "s", "r")), journal.ErrNotFound, "an update creates nothing")

	register(t, b, was)
	other := was
	other.ID = "another"
	_, err = b.Update(t.Context(), was, other)
	require.ErrorIs(t, err, journal.ErrInvalid, "was names another registration")
	require.ErrorContains(t, err, "was")
	bad := was
	bad.URL = "ftp://x.example/"
	_, err = b.Update(t.Context(), bad, was)
	require.ErrorIs(t, err, journal.ErrInvalid)
	require.Equal(t, was.URL, get(t, b, "s", "r").URL, "a refused update changes nothing")
}

// testAnUpdateOverNoneCreatesOnlyWhileNoneExists: Update over the zero
// Registration (Get found none) creates r as Register does; over one that
// exists by then it is ErrConflict naming it and changes nothing. Of many
// such creates at once exactly one applies, and what it wrote is stored.
func testAnUpdateOverNoneCreatesOnlyWhileNoneExists(t *testing.T, b Backend) {
	appendN(t, b, "s", 3)
	got, err := b.Update(t.Context(), reg("s", "r", "webhook"), store.Registration{})
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.NextSeq, "created at the oldest record, as Register does")
	require.Equal(t, got, get(t, b, "s", "r").Registration)

	late := reg("s", "r", "webhook")
	late.Config = store.Config(`{"secret":"late"}`)
	_, err = b.Update(t.Context(), late, store.Registration{})
	require.ErrorIs(t, err, journal.ErrConflict, "created since it was read as absent")
	require.ErrorContains(t, err, store.Name("s", "r"), "the error names the registration")
	require.Equal(t, `{"secret":"s3cr3t"}`, string(get(t, b, "s", "r").Config), "a refused create changes nothing")

	const n = 8
	var won atomic.Int32
	secret := make(chan string, n)
	race(t, n, func(w int) error {
		r := reg("s", "race", "webhook")
		r.Config = store.Config(fmt.Sprintf(`{"secret":"w%d"}`, w))
		_, err := b.Update(t.Context(), r, store.Registration{})
		if errors.Is(err, journal.ErrConflict) {
			return nil
		}
		if err == nil {
			won.Add(1)
			secret <- string(r.Config)
		}
		return err
	})
	require.Equal(t, int32(1), won.Load(), "one create of %d applies", n)
	require.Equal(t, <-secret, string(get(t, b, "s", "race").Config), "and what it wrote is stored")
}

package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/postgres"
)

// TestNoUpdateThatSucceededIsLostAcrossProcesses: two stores on pools of
// their own, as two daemons, race on one registration. One registers it
// again and again, whole, as `herald register` does, each time with a config
// log of its own name alone ("reg-k"); read-modify-writes on both append a
// name of their own to the log they read, through Update, reading again on
// ErrConflict, as rotate-secret and set-rate do. Every write that
// succeeded is seen until a later one supersedes it: before each register
// (and at the end) the log starts with the previous register's name (none
// undid it) and holds every read-modify-write that succeeded on it before
// the read (none undid another).
func TestNoUpdateThatSucceededIsLostAcrossProcesses(t *testing.T) {
	const (
		registers = 40
		writers   = 4  // read-modify-writes at once, half on each store
		writes    = 25 // by each writer
	)
	url := migratedURL(t)
	stores := []*postgres.Store{openStore(t, url), openStore(t, url)}
	ctx := t.Context()
	regWith := func(log ...string) store.Registration {
		cfg, err := json.Marshal(map[string][]string{"log": log})
		require.NoError(t, err)
		return store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r", Config: cfg}
	}
	logOf := func(st store.Status) ([]string, error) {
		var cfg struct{ Log []string }
		return cfg.Log, json.Unmarshal(st.Config, &cfg)
	}
	_, err := stores[1].Register(ctx, regWith("reg-0"))
	require.NoError(t, err)

	type success struct{ name, base string } // base: the register it appended to
	var (
		mu        sync.Mutex
		succeeded []success
		conflicts int
	)
	// seen checks that st's log descends from register base and holds
	// every success on base in done.
	seen := func(st store.Status, base string, done []success) error {
		log, err := logOf(st)
		if err != nil {
			return err
		}
		if len(log) == 0 || log[0] != base {
			return fmt.Errorf("the log %v does not start with %s, the last register: an update undid it", log, base)
		}
		for _, s := range done {
			if s.base == base && !slices.Contains(log, s.name) {
				return fmt.Errorf("the log %v lacks %s, which succeeded on %s: an update undid it", log, s.name, base)
			}
		}
		return nil
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { // the other daemon's registers
		for k := 1; k <= registers; k++ {
			mu.Lock()
			done := slices.Clone(succeeded)
			mu.Unlock()
			st, err := stores[1].Get(gctx, "s", "r")
			if err == nil {
				err = seen(st, fmt.Sprintf("reg-%d", k-1), done)
			}
			if err == nil {
				_, err = stores[1].Register(gctx, regWith(fmt.Sprintf("reg-%d", k)))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	for w := range writers {
		s := stores[w%2]
		g.Go(func() error {
			for i := range writes {
				name := fmt.Sprintf("w%d-%d", w, i)
				for {
					st, err := s.Get(gctx, "s", "r")
					if err != nil {
						return err
					}
					log, err := logOf(st)
					if err != nil {
						return err
					}
					r := regWith(append(log, name)...)
					_, err = s.Update(gctx, r, st.Registration)
					mu.Lock()
					if err == nil {
						succeeded = append(succeeded, success{name, log[0]})
					} else if errors.Is(err, journal.ErrConflict) {
						conflicts++
					}
					mu.Unlock()
					if err == nil {
						break
					}
					if !errors.Is(err, journal.ErrConflict) {
						return err
					}
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	st, err := stores[0].Get(ctx, "s", "r")
	require.NoError(t, err)
	require.NoError(t, seen(st, fmt.Sprintf("reg-%d", registers), succeeded))
	require.Len(t, succeeded, writers*writes, "every read-modify-write succeeded in the end")
	require.Positive(t, conflicts, "the writes raced: some read was changed before its write")
	t.Logf("%d registers, %d read-modify-writes, %d conflicts read again", registers, len(succeeded), conflicts)
}

// TestAnUpdateRacingAnUnregisterCreatesNothing: an Update whose
// registration another process deletes, in a transaction still open when
// the Update reads it, waits for that transaction and then finds none
// (ErrNotFound) rather than inserting it again.
func TestAnUpdateRacingAnUnregisterCreatesNothing(t *testing.T) {
	ctx := t.Context()
	url := migratedURL(t)
	s, other := openStore(t, url), openStore(t, url)
	was, err := s.Register(ctx, store.Registration{Stream: "s", ID: "r", Namespace: "webhook", URL: "https://receiver.example/r"})
	require.NoError(t, err)
	tx, err := other.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "DELETE FROM herald_registration WHERE stream = 's' AND id = 'r'")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		r := was
		r.URL = "https://moved.example/r"
		_, err := s.Update(ctx, r, was)
		done <- err
	}()
	waitForLockWait(t, s) // the Update waits for the deleting transaction
	require.NoError(t, tx.Commit(ctx))
	require.ErrorIs(t, <-done, journal.ErrNotFound)
	_, err = s.Get(ctx, "s", "r")
	require.ErrorIs(t, err, journal.ErrNotFound, "the update inserted nothing")
}

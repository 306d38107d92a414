package page_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// The seed fills a store with registrations in every state the page
// shows, at known instants, for the tests and the screenshots. It drives
// the store's own methods (Register, Due, Retry, Park, HostFailed), as a
// worker would, so what it leaves is what herald leaves.

// seedT0 is the seed's first instant; seedView is when the page should look.
var (
	seedT0   = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	seedView = seedT0.Add(30 * time.Minute)
)

// seedHostile is a receiver's error body that would run script if it were not
// escaped: the tests assert that window.__pwned stays unset.
const seedHostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">`

// seedHostileStream is a stream name that is markup.
const seedHostileStream = `evil/<svg/onload=window.__pwned=1>`

// seedReordering is a receiver's error text that would rearrange what the page
// shows around it (a right-to-left override, then a pop) and clear a
// terminal (ESC [2J): the page shows each as its code point.
const seedReordering = "see \u202Eexe.txt\u202C, \x1b[2J"

// seedReorderingShown is seedReordering as the page shows it.
const seedReorderingShown = "see ‹U+202E›exe.txt‹U+202C›, ‹U+001B›[2J"

// Secret strings that the seed puts where the page must not show them.
const (
	seedSecretQuery   = "token=capability-s3cr3t"
	seedSecretSegment = "AbCdEfGhIjKlMnOpQrStUv"
	seedSecretConfig  = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"
)

// seedCounts is what the overview must show for one namespace at seedView.
type seedCounts struct{ Ready, Retrying, Held, Parked, Idle, Behind int }

// seedExpected is the seed's expected overview, by namespace.
var seedExpected = map[string]seedCounts{
	"webhook":     {Ready: 2, Retrying: 1, Held: 1, Parked: 1, Idle: 1, Behind: 3 + 3 + 3 + 3 + 2},
	"cloudevents": {Ready: 1, Parked: 1, Behind: 3 + 3},
}

// seedDownHost is the host the seed brings down.
const seedDownHost = "down.example:443"

// seed fills s. Streams orders/1 (3 records), orders/2 (3 records) and
// seedHostileStream (2 records); registrations:
//
//	webhook     orders/1 billing   ready (URL with a capability segment and query, secret config)
//	webhook     orders/1 audit     retrying (503 with seedReordering body), due at seedT0+1h
//	webhook     orders/1 crm       parked (500 with seedHostile body)
//	webhook     orders/1 mirror    held: its host seedDownHost is down
//	webhook     orders/1 archive   idle
//	webhook     seedHostileStream x    ready
//	cloudevents orders/2 events    ready
//	cloudevents orders/2 legacy    parked (410)
func seed(ctx context.Context, s store.Backend) error {
	for _, st := range []struct {
		stream string
		n      int
	}{{"orders/1", 3}, {"orders/2", 3}, {seedHostileStream, 2}} {
		for i := 1; i <= st.n; i++ {
			if _, err := s.Append(ctx, st.stream, journal.Entry{ID: fmt.Sprintf("%s#%d", st.stream, i), Kind: "order.updated",
				ContentType: "application/json", Payload: fmt.Appendf(nil, `{"n":%d}`, i)}); err != nil {
				return fmt.Errorf("append %s: %w", st.stream, err)
			}
		}
	}
	// store/postgres numbers appended records after their commit: number
	// them now, so that heads are what the registrations below expect.
	if sq, ok := s.(interface {
		Sequence(ctx context.Context) (int, error)
	}); ok {
		if _, err := sq.Sequence(ctx); err != nil {
			return err
		}
	}
	reg := func(stream, id, ns, url string, next uint64) error {
		_, err := s.Register(ctx, push.Registration{Stream: stream, ID: id, Namespace: ns, URL: url, NextSeq: next,
			Config: push.Config(`{"secrets":["` + seedSecretConfig + `"]}`)})
		return err
	}
	// claim claims the one registration due in ns at at.
	claim := func(ns, id string, at time.Time) (store.Status, error) {
		b, err := s.Due(ctx, store.DueQuery{At: at, Limit: 1, Namespace: ns, Owner: "seed", LeaseUntil: at.Add(time.Minute)})
		if err != nil {
			return store.Status{}, err
		}
		if len(b.Registrations) != 1 || b.Registrations[0].ID != id {
			return store.Status{}, fmt.Errorf("seed: expected to claim %s at %v, got %d", id, at, len(b.Registrations))
		}
		return b.Registrations[0], nil
	}
	// Each registration claimed, and what befalls it.
	for _, r := range []struct {
		stream, id, ns, url string
		befalls             func(store.Claim) error
	}{
		{"orders/1", "audit", "webhook", "https://audit.example/in", func(c store.Claim) error {
			return s.Retry(ctx, c, 1, seedT0.Add(time.Hour), store.Evidence{At: seedT0, Event: store.EventFailed, Seq: 1, Attempt: 1,
				Status: 503, Body: "upstream busy: " + seedReordering, Error: "503 Service Unavailable: " + seedReordering, NotBefore: seedT0.Add(time.Hour)})
		}},
		{"orders/1", "crm", "webhook", "https://crm.example/hooks", func(c store.Claim) error {
			return s.Park(ctx, c, 1, store.Evidence{At: seedT0, Event: store.EventParked, Seq: 1, Attempt: 32,
				Status: 500, Body: seedHostile, Error: "500 Internal Server Error: " + seedHostile})
		}},
		{"orders/2", "legacy", "cloudevents", "https://legacy.example/events", func(c store.Claim) error {
			return s.Park(ctx, c, 1, store.Evidence{At: seedT0, Event: store.EventParked, Seq: 1, Attempt: 1,
				Status: 410, Error: "410 Gone: the receiver says it is gone for good"})
		}},
	} {
		if err := reg(r.stream, r.id, r.ns, r.url, 0); err != nil {
			return err
		}
		st, err := claim(r.ns, r.id, seedT0)
		if err != nil {
			return err
		}
		if err := r.befalls(st.Claim()); err != nil {
			return err
		}
	}
	if err := reg("orders/1", "mirror", "webhook", "https://down.example/inbox", 0); err != nil {
		return err
	}
	// Three host-level failures in a row bring seedDownHost down.
	for i := range store.HostDownAfter {
		at := seedT0.Add(time.Duration(i+1) * 5 * time.Minute)
		r, err := claim("webhook", "mirror", at)
		if err != nil {
			return err
		}
		if _, err := s.HostFailed(ctx, store.HostFailure{Claim: r.Claim(), NextSeq: 1, Host: seedDownHost,
			Evidence: store.Evidence{At: at, Seq: 1, Error: "dial tcp: connection refused"}, Horizon: store.DefaultHostHorizon}); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		stream, id, ns, url string
		next                uint64
	}{
		{"orders/1", "billing", "webhook", "https://billing.example/hooks/" + seedSecretSegment + "?" + seedSecretQuery, 0},
		{"orders/1", "archive", "webhook", "https://archive.example/in", 4},
		{seedHostileStream, "x", "webhook", "https://x.example/in", 0},
		{"orders/2", "events", "cloudevents", "https://events.example/in", 0},
	} {
		if err := reg(r.stream, r.id, r.ns, r.url, r.next); err != nil {
			return err
		}
	}
	return nil
}

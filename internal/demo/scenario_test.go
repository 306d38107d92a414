package demo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

func loopback(t *testing.T) *transport.HTTP {
	t.Helper()
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 10 * time.Second})
	require.NoError(t, err)
	return tr
}

func testConfig(t *testing.T, tr push.Transport) (Config, *bytes.Buffer) {
	t.Helper()
	in, err := Examples()
	require.NoError(t, err)
	st := memory.New()
	var out bytes.Buffer
	return Config{Journal: st, Store: st, Transport: tr, Input: in, Database: "memory", Out: &out,
		ShowRegistrations: func(w io.Writer, sts []store.Status) error {
			for _, s := range sts {
				if _, err := io.WriteString(w, s.Stream+"/"+s.ID+" "+s.State()+"\n"); err != nil {
					return err
				}
			}
			return nil
		}}, &out
}

// A receiver that cannot verify what it gets fails the demo, which says
// which receiver and why; the other registrations are unaffected. (The
// transport here changes one byte of every body bound for the webhook
// receiver after it was signed, as a broken proxy would.)
func TestRunFailsWhenAReceiverRefuses(t *testing.T) {
	t.Parallel()
	real := loopback(t)
	tampering := push.TransportFunc(func(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
		if reg.ID == "webhook" {
			signed, signer := msg.Body, msg.Signer
			msg.Signer = push.SignerFunc(func(req *http.Request, _ []byte, at time.Time) error { return signer.Sign(req, signed, at) })
			msg.Body = append(bytes.Clone(msg.Body), ' ')
		}
		return real.Deliver(ctx, reg, msg, at)
	})
	cfg, out := testConfig(t, tampering)
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.False(t, sum.OK, out.String())
	require.Contains(t, strings.Join(sum.Failures, "\n"), "the webhook receiver refused 3 deliveries it could not verify (standard webhooks:")
	require.Contains(t, strings.Join(sum.Failures, "\n"), "stream=webhooks/shop id=webhook is parked")
	for _, r := range sum.Registrations {
		switch {
		case r.ID == "webhook":
			require.True(t, r.Parked)
			require.Equal(t, 3, r.VerifyFailures)
			require.Zero(t, r.Verified)
		case r.Verifies:
			require.Equal(t, r.Expected, r.Verified, "%s/%s", r.Stream, r.ID)
			require.Positive(t, r.Verified)
		}
	}
	require.Contains(t, out.String(), "FAILED after")
	require.Contains(t, out.String(), "webhooks/shop/webhook parked", "the parked table lists it")
}

// --duration bounds the run: when it runs out while the demo delivers, the
// run stops (its workers saving every cursor) and the failure names who was
// still at work. The duration is made to run out at a chosen state, not at
// a wall-clock instant: as soon as the flaky receiver's registration is
// retrying (waiting out a Retry-After of 1 or 2 s), which it cannot have
// finished by then whatever the machine's load.
func TestRunStopsAtItsDuration(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t, loopback(t))
	cfg.Duration = time.Hour // never reached: expire ends it
	expired := false
	cfg.polled = func(rows []RegistrationSummary, expire func()) {
		for _, r := range rows {
			if r.Stream == "webhooks/shop" && r.ID == "flaky" && !expired && r.State == store.StateRetrying {
				expired = true
				expire()
			}
		}
	}
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.True(t, expired, "the flaky registration was seen retrying")
	require.False(t, sum.OK)
	require.Contains(t, sum.Failures[0], "the demo did not finish within --duration 1h0m0s: still at work: ")
	require.Contains(t, sum.Failures[0], "stream=webhooks/shop id=flaky (retrying at cursor")
	require.Contains(t, strings.Join(sum.Failures, "\n"), "stream=webhooks/shop id=down did not recover after its unpark")
	for _, r := range sum.Registrations {
		if r.ID == "flaky" {
			require.Less(t, r.NextSeq, r.Head+1, "the flaky registration was stopped short of its head")
		}
	}
}

// Config.Duration is the run's timer: one that has run out before anything
// could finish (the flaky receiver alone takes seconds) ends the run, in
// setup or while delivering, with a failure naming --duration.
func TestRunEndsWhenItsDurationRunsOut(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t, loopback(t))
	cfg.Duration = time.Nanosecond
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		require.ErrorContains(t, err, "the demo did not finish within --duration 1ns: it was still setting up")
		return
	}
	require.False(t, sum.OK)
	require.Contains(t, sum.Failures[0], "the demo did not finish within --duration 1ns: still at work: ")
}

// The demo refuses a database that is not empty: its workers would deliver
// the other registrations too, and nothing is changed.
func TestRunRefusesAUsedDatabase(t *testing.T) {
	t.Parallel()
	cfg, out := testConfig(t, loopback(t))
	st := cfg.Store.(*memory.Store)
	_, err := st.Register(context.Background(), push.Registration{Stream: "orders", ID: "billing", Namespace: "webhook", URL: "https://billing.example/hooks"})
	require.NoError(t, err)
	_, err = Run(context.Background(), cfg)
	require.ErrorContains(t, err, "memory already has registrations (stream=orders id=billing, …): the demo needs an empty database")
	require.Empty(t, out.String())

	cfg, _ = testConfig(t, loopback(t))
	_, err = cfg.Journal.Append(context.Background(), "actor/alice", journal.Entry{ID: "x", Kind: "Note", Payload: []byte(`{}`)})
	require.NoError(t, err)
	_, err = Run(context.Background(), cfg)
	require.ErrorContains(t, err, "already holds the stream actor/alice")
}

package push_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// post is one request a loopback receiver got.
type post struct {
	id, timestamp, signature, body string
}

// resendReceiver is a webhook receiver on loopback that answers status()
// and notes every POST.
type resendReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []post
	status int
}

func newResendReceiver(t *testing.T) *resendReceiver {
	rr := &resendReceiver{status: http.StatusOK}
	rr.srv = serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rr.mu.Lock()
		defer rr.mu.Unlock()
		rr.posts = append(rr.posts, post{r.Header.Get("Webhook-Id"), r.Header.Get("Webhook-Timestamp"), r.Header.Get("Webhook-Signature"), string(body)})
		w.WriteHeader(rr.status)
	})
	return rr
}

func (rr *resendReceiver) got() []post {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]post(nil), rr.posts...)
}

func (rr *resendReceiver) answer(status int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.status = status
}

// resendSetup is a webhook registration s/r of rr over the real transport,
// every one of 4 records delivered: its cursor at 5, all acknowledged.
func resendSetup(t *testing.T, rr *resendReceiver) (*fixture, *push.Worker, string) {
	t.Helper()
	f := newFixture(t)
	f.append("s", 4)
	secret := webhook.NewSecret()
	f.registered(push.Registration{Stream: "s", ID: "r", Namespace: webhook.Namespace, URL: rr.srv.URL + "/hooks",
		Config: push.Config(fmt.Sprintf(`{"secrets":[%q]}`, secret))})
	w := f.build(f.store, f.store, loopback(t, 0), webhook.New())
	rep := f.sweep(w, at(0))
	require.Equal(t, 4, rep.Deliveries)
	require.Equal(t, uint64(5), f.get("s", "r").NextSeq)
	return f, w, secret
}

// verify checks a Standard Webhooks signature of p with secret.
func verify(t *testing.T, secret string, p post) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(p.id + "." + p.timestamp + "." + p.body))
	require.Contains(t, strings.Fields(p.signature), "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// A resend of seq 2 to a registration at cursor 5 is one more POST of
// record 2, with its original id and body, signed at the sweep's instant;
// the cursor stays 5, nothing else is sent, and the answer is on record.
func TestResendIsOneMoreDeliveryWithTheOriginalID(t *testing.T) {
	rr := newResendReceiver(t)
	f, w, secret := resendSetup(t, rr)
	first := rr.got()[1]
	require.Equal(t, "s#2", first.id)

	require.NoError(t, errOf(f.store.Resend(t.Context(), "s", "r", 2, at(10), "alice")))
	rep := f.sweep(w, at(20))
	require.Equal(t, push.SweepReport{Resends: 1}, rep, "no registration claimed: it has nothing due")
	got := rr.got()
	require.Len(t, got, 5, "exactly one more POST")
	again := got[4]
	require.Equal(t, "s#2", again.id, "the original message id")
	require.Equal(t, first.body, again.body)
	require.Equal(t, fmt.Sprint(at(20).Unix()), again.timestamp, "signed at the sweep's instant")
	verify(t, secret, again)

	st := f.get("s", "r")
	require.Equal(t, uint64(5), st.NextSeq, "the cursor is untouched")
	require.Zero(t, st.Attempts)
	require.Empty(t, st.LastError)
	ev := f.evidence("s", "r")
	require.Len(t, ev, 1)
	require.Equal(t, store.EventResent, ev[0].Event)
	require.Equal(t, uint64(2), ev[0].Seq)
	require.Equal(t, "s#2", ev[0].RecordID)
	require.Equal(t, "s#2", ev[0].MessageID)
	require.Equal(t, 200, ev[0].Status)
	require.Equal(t, "resent for alice", ev[0].Error)
	require.Equal(t, at(20), ev[0].At)

	require.Equal(t, push.SweepReport{}, f.sweep(w, at(30)), "sent once")
	require.Len(t, rr.got(), 5)
}

// A resend the receiver refuses is tried once: its answer is the evidence,
// and neither the registration's attempts nor its next attempt nor the
// host's health move; the operator may ask again.
func TestAFailedResendIsOnRecordAndNotRetried(t *testing.T) {
	rr := newResendReceiver(t)
	f, w, _ := resendSetup(t, rr)
	before := f.get("s", "r")
	rr.answer(http.StatusServiceUnavailable)
	require.NoError(t, errOf(f.store.Resend(t.Context(), "s", "r", 3, at(10), "alice")))
	require.Equal(t, push.SweepReport{Resends: 1}, f.sweep(w, at(20)))
	ev := f.evidence("s", "r")[0]
	require.Equal(t, store.EventResent, ev.Event)
	require.Equal(t, 503, ev.Status)
	require.Equal(t, "resend for alice failed: 503 Service Unavailable", ev.Error)
	after := f.get("s", "r")
	require.Equal(t, before.NextSeq, after.NextSeq)
	require.Equal(t, before.NextAttemptAt, after.NextAttemptAt)
	require.Zero(t, after.Attempts)
	require.Equal(t, push.SweepReport{}, f.sweep(w, at(1000)), "not retried")
	require.Len(t, rr.got(), 5)

	// A receiver gone: the failure is the resend's, never its host's.
	rr.answer(http.StatusOK)
	rr.srv.Close()
	require.NoError(t, errOf(f.store.Resend(t.Context(), "s", "r", 3, at(1001), "bob")))
	require.Equal(t, push.SweepReport{Resends: 1}, f.sweep(w, at(1002)))
	ev = f.evidence("s", "r")[0]
	require.Zero(t, ev.Status)
	require.Contains(t, ev.Error, "resend for bob failed: ")
	hosts, err := f.store.Hosts(t.Context(), store.HostQuery{})
	require.NoError(t, err)
	require.Empty(t, hosts, "no host failure counted")
}

// A paused registration is resent to, as the operator asked, and stays
// paused; a record pruned before its resend was sent is told, not sent.
func TestResendToAPausedRegistrationAndOfAPrunedRecord(t *testing.T) {
	rr := newResendReceiver(t)
	f, w, _ := resendSetup(t, rr)
	ctx := t.Context()
	require.NoError(t, f.store.Pause(ctx, "s", "r", at(5), "alice", "maintenance"))
	require.NoError(t, errOf(f.store.Resend(ctx, "s", "r", 4, at(6), "alice")))
	require.Equal(t, push.SweepReport{Resends: 1}, f.sweep(w, at(7)))
	require.Equal(t, "s#4", rr.got()[4].id)
	require.True(t, f.get("s", "r").Paused)

	require.NoError(t, errOf(f.store.Resend(ctx, "s", "r", 1, at(8), "bob")))
	_, err := f.store.Prune(ctx, store.PruneQuery{At: at(9)})
	require.NoError(t, err)
	require.Equal(t, push.SweepReport{Resends: 1}, f.sweep(w, at(10)))
	require.Len(t, rr.got(), 5, "nothing sent")
	ev := f.evidence("s", "r")[0]
	require.Equal(t, store.EventResent, ev.Event)
	require.Equal(t, "resend for bob failed: record #1 is no longer in the journal (pruned)", ev.Error)
}

// A resend whose receiver answers after the lease's length keeps its lease
// (renewed as a turn's is): no other worker sends it meanwhile, and its
// answer is recorded under its claim.
func TestALongResendKeepsItsLease(t *testing.T) {
	f := newFixture(t)
	f.append("s", 2)
	f.registered(push.Registration{Stream: "s", ID: "r", URL: "https://a.example/", NextSeq: 3})
	require.NoError(t, errOf(f.store.Resend(t.Context(), "s", "r", 1, at(0), "alice")))
	g := newGate()
	db := newRenewals(f.store)
	lease := push.WithLease(2 * time.Second)
	w1 := f.build(f.store, db, g.transport("", accepted()), f.proj, push.WithOwner("w1"), lease)
	w2 := f.worker(push.WithOwner("w2"), lease)

	done := make(chan push.SweepReport, 1)
	go func() { rep, _ := w1.RunOnce(t.Context(), at(0), 10); done <- rep }()
	<-g.entered
	for range 3 { // a third of the lease each: the send has outlived the lease it was claimed with
		got := receive(t, db.resends)
		require.Len(t, got, 1, "the resend's lease is renewed")
		require.True(t, strings.HasPrefix(got[0].Owner, "w1#"), got[0].Owner)
	}
	rep, err := w2.RunOnce(t.Context(), at(0).Add(2500*time.Millisecond), 10)
	require.NoError(t, err)
	require.Zero(t, rep.Resends, "w1's renewed lease is live: w2 must not send it")
	close(g.release)
	require.Equal(t, 1, (<-done).Resends)
	require.Empty(t, f.recv.sent(), "w2 sent nothing")
	ev := f.evidence("s", "r")
	require.Len(t, ev, 1)
	require.Equal(t, "resent for alice", ev[0].Error)
}

// errOf is a resend's error, its queued dropped.
func errOf(_ bool, err error) error { return err }

package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// t0 is the tests' epoch: every instant is t0 plus a stated offset.
var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// httpTransport is a minimal push.Transport for these tests (the real one
// lives in transport/): it POSTs with net/http, names its worker in a
// header, and classifies 2xx as Accepted, anything else as Transient.
type httpTransport struct {
	client *http.Client
	worker string
}

func (h httpTransport) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.URL, bytes.NewReader(msg.Body))
	if err != nil {
		return push.Outcome{Verdict: push.Permanent, Reason: err.Error()}, nil
	}
	for k, v := range msg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", msg.ContentType)
	req.Header.Set("X-Worker", h.worker)
	req.Header.Set("X-At", strconv.FormatInt(at.Unix(), 10))
	started := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, ctx.Err()
		}
		return push.Outcome{Verdict: push.Transient, Reason: err.Error(), Duration: time.Since(started)}, nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	out := push.Outcome{Status: resp.StatusCode, Duration: time.Since(started)}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		out.Verdict = push.Accepted
	} else {
		out.Verdict, out.Reason = push.Transient, resp.Status
	}
	return out, nil
}

// payloadProjection sends each record's payload as one message, naming the
// registration and the seq in headers for the receiver's bookkeeping.
type payloadProjection struct{ namespace string }

func (p payloadProjection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	h := http.Header{}
	h.Set("X-Registration", reg.Stream+"/"+reg.ID)
	h.Set("X-Seq", strconv.FormatUint(rec.Seq, 10))
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Header: h, Body: rec.Payload}}, nil
}

func (p payloadProjection) Terminal(rec journal.Record) bool { return rec.Final }
func (p payloadProjection) Namespace() string                { return p.namespace }

// acceptAll is an in-process transport for tests about the store, not the
// network: every message is accepted.
type acceptAll struct{}

func (acceptAll) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	return push.Outcome{Verdict: push.Accepted, Status: 200}, nil
}

// countingJournal counts the Reads a worker makes.
type countingJournal struct {
	journal.Journal
	reads *atomic.Int64
}

func (c countingJournal) Read(ctx context.Context, stream string, fromSeq uint64, limit int) ([]journal.Record, error) {
	c.reads.Add(1)
	return c.Journal.Read(ctx, stream, fromSeq, limit)
}

func key(stream, id string) string { return stream + "/" + id }

func regURL(base, stream, id string) string { return fmt.Sprintf("%s/inbox/%s/%s", base, stream, id) }

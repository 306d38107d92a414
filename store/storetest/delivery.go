package storetest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
)

// HTTPTransport is the smallest real push.Transport, for a store's own
// tests that deliver to a receiver over loopback (the transport proper is
// package transport's). It POSTs the message's body with its headers,
// Content-Type, Message-Id (the message's id), X-At (the attempt's instant,
// Unix seconds) and, when Worker is set, X-Worker. A 2xx answer is
// Accepted, 410 Permanent, any other answer or network error Transient; up
// to store.MaxEvidenceBody of the answer is kept.
type HTTPTransport struct {
	Client *http.Client
	Worker string
}

// Deliver makes one attempt; it returns an error only once ctx is done.
func (h HTTPTransport) Deliver(ctx context.Context, reg store.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.URL, bytes.NewReader(msg.Body))
	if err != nil {
		return push.Outcome{Verdict: push.Permanent, Reason: "bad request: " + err.Error()}, nil
	}
	for k, v := range msg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", msg.ContentType)
	req.Header.Set("Message-Id", msg.ID)
	req.Header.Set("X-At", strconv.FormatInt(at.Unix(), 10))
	if h.Worker != "" {
		req.Header.Set("X-Worker", h.Worker)
	}
	started := time.Now()
	resp, err := h.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, ctx.Err()
		}
		return push.Outcome{Verdict: push.Transient, Reason: err.Error(), Duration: time.Since(started)}, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, store.MaxEvidenceBody))
	_, _ = io.Copy(io.Discard, resp.Body)
	out := push.Outcome{Status: resp.StatusCode, Body: body, Duration: time.Since(started), Reason: resp.Status}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Verdict = push.Accepted
	case resp.StatusCode == http.StatusGone:
		out.Verdict = push.Permanent
	default:
		out.Verdict = push.Transient
	}
	return out, nil
}

// PayloadProjection sends each record's payload as one message in the
// webhook namespace, its id the record's, naming the registration
// (X-Registration, stream/id) and the seq (X-Seq) in headers for the
// receiver's bookkeeping.
type PayloadProjection struct{}

// Messages returns the record's one message.
func (PayloadProjection) Messages(_ context.Context, rec journal.Record, reg store.Registration) ([]push.Message, error) {
	h := http.Header{}
	h.Set("X-Registration", reg.Stream+"/"+reg.ID)
	h.Set("X-Seq", strconv.FormatUint(rec.Seq, 10))
	return []push.Message{{ID: rec.ID, ContentType: rec.ContentType, Header: h, Body: rec.Payload}}, nil
}

// Terminal reports whether rec is a stream's final record.
func (PayloadProjection) Terminal(rec journal.Record) bool { return rec.Final }

// Namespace is "webhook".
func (PayloadProjection) Namespace() string { return "webhook" }

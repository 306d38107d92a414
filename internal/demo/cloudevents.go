package demo

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// ceReceiver receives CloudEvents with sdk-go's own HTTP receiver
// (client.NewHTTPReceiveHandler): sdk-go decodes the event (binary or
// structured content mode) and validates it; the callback checks the bearer
// token, then the event's id, source, type, subject, time, datacontenttype
// and data against the record the journal holds for it. A request sdk-go
// refuses before the callback runs counts as a failure too.
type ceReceiver struct {
	sdk    http.Handler
	token  string
	source func(stream string) string // the source each stream is registered with
	ledger *ledger
}

// sourceOf is the CloudEvents source a webhook stream is registered with.
func sourceOf(stream string) string { return Origin + "/" + stream }

type handledKey struct{}

func newCEReceiver(ctx context.Context, token string, source func(string) string, l *ledger) (*ceReceiver, error) {
	r := &ceReceiver{token: token, source: source, ledger: l}
	p, err := ce.NewHTTP()
	if err != nil {
		return nil, fmt.Errorf("cloudevents receiver: %w", err)
	}
	h, err := ce.NewHTTPReceiveHandler(ctx, p, r.receive)
	if err != nil {
		return nil, fmt.Errorf("cloudevents receiver: %w", err)
	}
	r.sdk = h
	return r, nil
}

func (r *ceReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var handled atomic.Bool
	ctx := context.WithValue(cehttp.WithRequestDataAtContext(req.Context(), req), handledKey{}, &handled)
	rec := &statusRecorder{ResponseWriter: w}
	r.sdk.ServeHTTP(rec, req.WithContext(ctx))
	if !handled.Load() {
		_ = r.ledger.fail(req.URL.Path, fmt.Errorf("sdk-go refused the request (%d %s) before decoding an event", rec.status(), http.StatusText(rec.status())))
	}
}

// receive is sdk-go's callback: it runs once sdk-go has decoded and
// validated an event.
func (r *ceReceiver) receive(ctx context.Context, e event.Event) protocol.Result {
	if h, ok := ctx.Value(handledKey{}).(*atomic.Bool); ok {
		h.Store(true)
	}
	rd := cehttp.RequestDataFromContext(ctx)
	if rd == nil {
		return cehttp.NewResult(http.StatusInternalServerError, "no request data in the context")
	}
	path := rd.URL.Path
	want := "Bearer " + r.token
	if got := rd.Header.Get("Authorization"); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return r.refuse(path, errors.New("no valid bearer token"))
	}
	if _, err := r.ledger.check(path, e.ID(), nil, func(x expected) error { return r.matches(e, x) }); err != nil {
		return cehttp.NewResult(http.StatusUnauthorized, "not verified: %s", err.Error())
	}
	return nil // sdk-go answers 200
}

func (r *ceReceiver) refuse(path string, err error) protocol.Result {
	return cehttp.NewResult(http.StatusUnauthorized, "not verified: %s", r.ledger.fail(path, err).Error())
}

// matches compares the decoded event with the record it was made from
// (the projection's doc: id = record id, source from the config, type =
// kind, subject = stream, time = appended-at).
func (r *ceReceiver) matches(e event.Event, x expected) error {
	rec := x.Record
	for _, c := range []struct{ attr, got, want string }{
		{"id", e.ID(), rec.ID},
		{"source", e.Source(), r.source(rec.Stream)},
		{"type", e.Type(), rec.Kind},
		{"subject", e.Subject(), rec.Stream},
		{"datacontenttype", e.DataContentType(), rec.ContentType},
	} {
		if c.got != c.want {
			return fmt.Errorf("%s %q, want %q", c.attr, c.got, c.want)
		}
	}
	if !e.Time().Equal(rec.AppendedAt) {
		return fmt.Errorf("time %s, want the record's appended-at %s", e.Time(), rec.AppendedAt)
	}
	if !bytes.Equal(e.Data(), rec.Payload) {
		return fmt.Errorf("data (%d bytes) differs from the record's payload (%d bytes)", len(e.Data()), len(rec.Payload))
	}
	return nil
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

package push

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Projection turns one record into the wire messages of one registration.
//
// Messages must be a pure function of its inputs: the same record and
// registration give byte-identical messages, so a retry sends what the first
// attempt sent and message ids stay stable. Anything that depends on the
// instant of sending (an HTTP signature's Date, a webhook timestamp) belongs
// in the message's Signer, which the transport calls with the sweep's `at`.
type Projection interface {
	// Messages returns the messages for rec, in sending order. None means
	// the registration has nothing to receive for this record (an activity
	// not addressed to it, say): the cursor moves past it. An error is this
	// plane's fault (bad config, unparseable payload); the worker retries
	// under the ceiling and records the error as evidence.
	Messages(ctx context.Context, rec journal.Record, reg Registration) ([]Message, error)
	// Terminal reports whether acknowledging rec ends the registration
	// (usually rec.Final; A2A also ends on a terminal task state).
	Terminal(rec journal.Record) bool
	// Namespace is the namespace this projection serves.
	Namespace() string
}

// ConfigValidator is implemented by projections that can check a
// registration's config before it is stored. Worker.Register calls it.
type ConfigValidator interface {
	// ValidateConfig returns an error wrapping journal.ErrInvalid that names
	// the bad field, never its secret value.
	ValidateConfig(reg Registration) error
}

// Message is what goes on the wire: one POST.
type Message struct {
	// ID is stable across retries (receivers dedupe on it): the record id
	// when a record yields one message.
	ID          string
	ContentType string      // Content-Type of Body
	Header      http.Header // further headers; the transport sets Host, Content-Length, User-Agent
	Body        []byte
	// Signer, if set, is applied to the final request at send time.
	Signer Signer
}

// String describes the message without its headers (which may carry tokens)
// or body.
func (m Message) String() string {
	return fmt.Sprintf("message %s (%s, %d bytes)", m.ID, m.ContentType, len(m.Body))
}

// GoString is String: %#v must not print the headers either.
func (m Message) GoString() string { return m.String() }

// Format prints String for every verb, so no fmt verb reveals a header.
func (m Message) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, m.String()) }

// Signer signs a request just before it is sent, on every attempt, with the
// sweep's instant (HTTP Signatures' Date, Standard Webhooks' timestamp). The
// request's body is body; the signer must not consume req.Body. Signers hold
// keys: their String methods must redact them.
type Signer interface {
	Sign(req *http.Request, body []byte, at time.Time) error
}

// SignerFunc adapts a function to Signer.
type SignerFunc func(req *http.Request, body []byte, at time.Time) error

// Sign calls f.
func (f SignerFunc) Sign(req *http.Request, body []byte, at time.Time) error { return f(req, body, at) }

// String redacts.
func (f SignerFunc) String() string { return "SignerFunc" }

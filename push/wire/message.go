// Package wire holds what crosses a worker's edges: the [Message] a
// [Projection] makes of a record and a [Transport] puts on the wire, the
// [Outcome] it classifies the answer as, and what the worker tells of its
// attempts and sweeps ([Attempt], [SweepReport], [Hooks], the names of its
// spans). Package push, which a program imports, and its engine both use
// these; push gives each the same name (push.Message is wire.Message), so a
// program or a projection needs only push.
package wire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Projection turns one record into the wire messages of one registration.
// Messages must be a pure function of its inputs, so that a retry sends the
// same bytes and ids; what depends on the instant of sending (a signature's
// Date, a webhook timestamp) belongs in the message's Signer.
type Projection interface {
	// Messages returns the messages for rec, in sending order; none moves
	// the cursor past it. An error is this plane's fault (bad config, a bad
	// payload): retried under the ceiling, recorded as evidence.
	Messages(ctx context.Context, rec journal.Record, reg store.Registration) ([]Message, error)
	// Terminal reports whether acknowledging rec ends the registration
	// (usually rec.Final; A2A also ends on a terminal task state).
	Terminal(rec journal.Record) bool
	// Namespace is the namespace this projection serves.
	Namespace() string
}

// Message is what goes on the wire: one POST.
type Message struct {
	ID          string      // stable across retries, for receivers to dedupe: the record id when it yields one message
	ContentType string      // Content-Type of Body
	Header      http.Header // further headers; the transport sets Host, Content-Length, User-Agent
	Body        []byte
	Signer      Signer // if set, signs the final request at send time
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

// Signer signs a request on every attempt, just before it is sent, at the
// sweep's instant. body is the request's; req.Body must not be consumed.
// Signers hold keys: their String methods must redact them.
type Signer interface {
	Sign(req *http.Request, body []byte, at time.Time) error
}

// SignerFunc adapts a function to Signer.
type SignerFunc func(req *http.Request, body []byte, at time.Time) error

// Sign calls f.
func (f SignerFunc) Sign(req *http.Request, body []byte, at time.Time) error { return f(req, body, at) }

// String redacts.
func (f SignerFunc) String() string { return "SignerFunc" }

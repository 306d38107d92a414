// Package cloudevents is herald's CloudEvents projection, for the
// "cloudevents" namespace: each record of a stream becomes one CloudEvent
// (CloudEvents v1.0.2) POSTed over HTTP (the CloudEvents HTTP Protocol
// Binding v1.0.2).
//
// # The event
//
// The context attributes (CloudEvents v1.0.2, "Context Attributes") come
// from the record and the registration's config ([Config]):
//
//	specversion      "1.0"
//	id               record id (stable across retries; receivers dedupe on it)
//	source           config "source", a URI-reference
//	type             record kind, e.g. "com.github.push"
//	subject          record stream, e.g. "repo/octo-org/octo-repo"
//	time             record appended-at, RFC 3339 in UTC (omitted if zero)
//	datacontenttype  record content type (journal.DefaultContentType when empty)
//	data             record payload
//
// The message id is the record id. A record that makes no valid CloudEvent
// is an error from Messages wrapping journal.ErrInvalid.
//
// # Content modes
//
// The encoding is sdk-go's (github.com/cloudevents/sdk-go/v2): the event is
// written into an HTTP request by its HTTP binding, and the message takes
// that request's headers and body, so herald writes no ce- header itself.
//
// Binary content mode (HTTP binding §3.1) is the default: the body is the
// payload as appended, Content-Type is the datacontenttype (§3.1.1), and
// every other attribute is a ce- header (§3.1.3), e.g. Ce-Id, Ce-Source,
// Ce-Type, Ce-Subject, Ce-Time, Ce-Specversion.
//
// Structured content mode (HTTP binding §3.2), with config "structured":
// true, sends the whole event as one JSON object (JSON Event Format v1.0.2)
// with Content-Type application/cloudevents+json (§3.2.1). The payload is
// embedded (JSON format §3.1.1) as a JSON value under "data" when its type
// is application/json or text/json and it is JSON, as a JSON string under
// "data" for any other text/* type, and base64 under "data_base64" for
// everything else and whenever it is not UTF-8. Other +json types go base64
// too: sdk-go would write them as a JSON string, which §3.1.1 forbids for
// JSON content.
//
// A config "token" adds "Authorization: Bearer <token>" (RFC 6750 §2.1).
//
// # Determinism
//
// Messages is a pure function of the record and the registration: the
// attributes are fixed, sdk-go writes structured JSON members in a fixed
// order and formats time from the record, and nothing reads a clock or a
// random source, so a retry sends the bytes the first attempt sent.
//
// # Known limits of sdk-go
//
// sdk-go v2 writes ce- header values as they are, without the
// percent-encoding of non-ASCII characters that HTTP binding §3.1.3.2 asks
// for; a stream, kind or id outside printable ASCII therefore travels as
// raw UTF-8 in binary mode (which sdk-go receivers read back as sent).
// Structured mode carries such values in the JSON body and is the safer
// choice for them.
package cloudevents

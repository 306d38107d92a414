// Package webhook is herald's Standard Webhooks projection: it delivers the
// records of a journal stream to an HTTP endpoint as Standard Webhooks
// (https://www.standardwebhooks.com, specification 1.0.0), signed with the
// standard library's HMAC-SHA256 as the specification defines (its tests
// check every signature with the reference library,
// github.com/standard-webhooks/standard-webhooks/libraries/go). It serves
// the "webhook" namespace.
//
// # Messages
//
// Each record gives one message: a POST whose body is the record's payload,
// byte for byte, or its envelope (below), with
//
//	Content-Type:      the record's content type; the envelope's,
//	                   application/json
//	webhook-id:        the record id, the same on every retry (receivers
//	                   dedupe on it)
//	webhook-timestamp: the attempt's instant (the sweep's at), unix seconds
//	webhook-signature: v1,<base64(HMAC-SHA256(key, id.timestamp.body))>
//	                   for each secret of the config, space-separated
//	Herald-Kind:       the record's kind
//	Herald-Stream:     the record's stream
//	Herald-Seq:        the record's seq, decimal (1-based, gapless in the
//	                   stream)
//
// The webhook- headers are the specification's ("Signature scheme" and
// "Webhook headers"). The timestamp and signatures are computed by the
// message's signer on every attempt, so a retry is never refused as a
// replay: the reference verifiers reject a timestamp more than 5 minutes
// from their clock.
//
// The Herald- headers let a receiver route on the kind, and order and
// de-duplicate by stream and seq, without parsing the body. Kinds and
// streams are the producer's text, so their values are encoded by
// [HeaderValue]: printable ASCII as is but for '"' and '%', every other
// byte as %XX (as the CloudEvents HTTP binding 1.0.2, §3.1.3.2, encodes
// its headers). No name can make an invalid header, and a name of plain
// ASCII ("order.paid", "tenant/42") is sent as it is; decode with a
// percent-decoder that leaves '+' alone (Go's url.PathUnescape). They are
// not signed: the specification signs the id, timestamp and body only, so a
// receiver that must trust the kind reads the envelope's type.
//
// The specification asks that message ids not be user-controlled, or at
// least contain no '.', which delimits the signed content. herald signs the
// record id as given: applications whose record ids users can choose should
// keep '.' out of them.
//
// # Envelope
//
// With "envelope": true in the config ([Config]), the body is the record in
// the payload structure the specification recommends ("Payload" → "Payload
// structure"), as compact JSON:
//
//	{"type":"order.paid","timestamp":"2026-03-15T11:00:00.123456Z","data":{"id":1001,"total":42}}
//
// type is the record's kind; timestamp is when the record was appended
// (when the event occurred; webhook-timestamp is the attempt's), RFC 3339
// in UTC with exactly six fractional digits ([TimestampFormat]:
// microseconds, finer ones dropped); data is the payload's JSON text as
// appended, without surrounding whitespace, when the record's content type
// is JSON (application/json or any +json). A payload of another content
// type is not a JSON value, and a receiver could not tell text from bytes
// in a JSON string, so it comes base64-encoded (RFC 4648 §4, padded) with
// its content type, as CloudEvents' JSON format and herald's own API carry
// bytes:
//
//	{"type":"report.ready","timestamp":"…","content_type":"text/csv","data_base64":"aWQsdG90YWwK"}
//
// The signature covers the envelope, the bytes sent, as it covers a payload
// sent alone. Every record has an envelope: it adds no error to Messages.
// A config whose envelope is not a JSON boolean is refused at register time
// (journal.ErrInvalid naming config.envelope; herald register's flag is
// --envelope, which only the webhook namespace takes). Without the
// envelope the kind is in Herald-Kind only; herald's own events
// (push.EventsStream) also name it in their payload's "kind".
//
// # Secrets
//
// The registration's config lists 1 to MaxSecrets secrets, each "whsec_"
// and the base64 of 24 to 64 bytes (see [Config]). Signing with several is
// how a receiver rotates its secret without downtime: it accepts any one
// valid signature.
package webhook

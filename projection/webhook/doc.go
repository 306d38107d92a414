// Package webhook is herald's Standard Webhooks projection, for the
// "webhook" namespace: each record is POSTed to an HTTP endpoint as a
// Standard Webhook (https://www.standardwebhooks.com, specification 1.0.0),
// signed with HMAC-SHA256 as the specification defines; the tests verify
// every signature with the reference library,
// github.com/standard-webhooks/standard-webhooks/libraries/go.
//
// # Messages
//
// Each record gives one message: a POST whose body is the record's payload,
// byte for byte, or its envelope (below), with
//
//	Content-Type:      the record's content type (journal.DefaultContentType
//	                   when empty); the envelope's, application/json
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
// "Webhook headers"), signed afresh on every attempt: the reference
// verifiers refuse a timestamp more than 5 minutes from their clock, so a
// retry is never refused as a replay. The specification asks that message
// ids hold no '.', which delimits the signed content: applications whose
// users choose record ids should keep '.' out of them.
//
// The Herald- headers let a receiver route on the kind, and order and
// de-duplicate by stream and seq, without parsing the body. Kinds and
// streams are the producer's text, so their values are encoded by
// [HeaderValue], and a name of plain ASCII ("order.paid", "tenant/42") is
// sent as it is. They are not signed (the specification signs the id, the
// timestamp and the body): a receiver that must trust the kind reads the
// envelope's type.
//
// # Envelope
//
// With "envelope": true in the config ([Config]), the body is the record in
// the payload structure the specification recommends ("Payload structure"),
// as compact JSON:
//
//	{"type":"order.paid","timestamp":"2026-03-15T11:00:00.123456Z","data":{"id":1001,"total":42}}
//
// type is the record's kind; timestamp is when the record was appended (the
// event's instant; webhook-timestamp is the attempt's), in [TimestampFormat];
// data is the payload's JSON text as appended, without the whitespace around
// it, when the record's content type is JSON (application/json or any
// +json). Any other payload is not a JSON value, and a JSON string would
// leave the receiver guessing text from bytes, so it comes base64-encoded
// (RFC 4648 §4, padded) with its content type, as CloudEvents' JSON format
// and herald's own API carry bytes:
//
//	{"type":"report.ready","timestamp":"…","content_type":"text/csv","data_base64":"aWQsdG90YWwK"}
//
// The signature covers the envelope, the bytes sent. Every record has an
// envelope: it adds no error to Messages. Without it the kind is in
// Herald-Kind only (herald's own events, push.EventsStream, also name it in
// their payload's "kind").
//
// # Secrets
//
// A config lists 1 to [MaxSecrets] secrets. Signing with each is how a
// receiver rotates its secret without downtime: it accepts any one valid
// signature.
package webhook

// Package webhook is herald's Standard Webhooks projection, for the
// "webhook" namespace: each record is POSTed as a Standard Webhook
// (https://www.standardwebhooks.com, specification 1.0.0), signed with
// HMAC-SHA256 ("Signature scheme").
//
// # Messages
//
// Each record gives one message, whose body is the payload byte for byte,
// or its envelope (below), with
//
//	Content-Type:      the record's content type (journal.DefaultContentType
//	                   when empty); the envelope's, application/json
//	webhook-id:        the record id, the same on every retry
//	webhook-timestamp: the attempt's instant (the sweep's at), unix seconds
//	webhook-signature: v1,<base64(HMAC-SHA256(key, id.timestamp.body))>
//	                   for each secret of the config, and each retiring
//	                   one whose until is after the attempt's instant
//	                   (Config.Rotate), space-separated
//	Herald-Kind:       the record's kind, encoded by HeaderValue
//	Herald-Stream:     the record's stream, encoded by HeaderValue
//	Herald-Seq:        the record's seq, decimal (1-based, gapless)
//
// The webhook- headers are signed afresh on every attempt: verifiers refuse
// a timestamp more than 5 minutes from their clock. Record ids should hold
// no '.', which delimits the signed content. The Herald- headers let a
// receiver route without parsing the body; they are not signed.
//
// # Envelope
//
// With "envelope": true in the config, the body is the record in the
// specification's "Payload structure", compact JSON:
//
//	{"type":"order.paid","timestamp":"2026-03-15T11:00:00.123456Z","data":{"id":1001,"total":42}}
//	{"type":"report.ready","timestamp":"…","content_type":"text/csv","data_base64":"aWQsdG90YWwK"}
//
// type is the record's kind; timestamp its appended-at in [TimestampFormat].
// A JSON payload (journal.IsJSON) is data, trimmed of leading and trailing
// whitespace (the rest as appended); any other is content_type and
// data_base64, standard padded base64 (RFC 4648 §4).
package webhook

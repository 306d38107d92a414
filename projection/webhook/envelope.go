package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/heraldpush/herald/journal"
)

// TimestampFormat is the layout of the envelope's "timestamp": RFC 3339 in
// UTC with exactly six fractional digits (microseconds, the precision
// PostgreSQL keeps; finer ones are dropped, not rounded), as in the
// specification's examples.
const TimestampFormat = "2006-01-02T15:04:05.000000Z"

// envelopeContentType is the Content-Type of an envelope.
const envelopeContentType = "application/json"

// envelope returns rec, whose content type is ct, in the payload structure
// of Standard Webhooks 1.0.0 ("Payload structure"), as compact JSON:
//
//	{"type":KIND,"timestamp":APPENDED-AT,"data":PAYLOAD}
//
// when ct is JSON (journal.IsJSON), data being the payload's JSON text as
// appended, without the whitespace around it; otherwise, since data must be
// a JSON value and the payload is bytes,
//
//	{"type":KIND,"timestamp":APPENDED-AT,"content_type":CT,"data_base64":BASE64}
//
// with the standard, padded base64 of the payload (RFC 4648 §4).
func envelope(rec journal.Record, ct string) []byte {
	mt, _, _ := strings.Cut(ct, ";")
	data := bytes.Trim(rec.Payload, " \t\r\n")
	isJSON := journal.IsJSON(strings.TrimSpace(mt))
	size := len(rec.Kind) + len(ct) + 96
	if isJSON {
		size += len(data)
	} else {
		size += base64.StdEncoding.EncodedLen(len(rec.Payload))
	}
	b := make([]byte, 0, size)
	b = append(b, `{"type":`...)
	b = appendString(b, rec.Kind)
	b = append(b, `,"timestamp":"`...)
	b = rec.AppendedAt.UTC().AppendFormat(b, TimestampFormat)
	if !isJSON {
		b = append(b, `","content_type":`...)
		b = appendString(b, ct)
		b = append(b, `,"data_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, rec.Payload)
		return append(b, `"}`...)
	}
	b = append(b, `","data":`...)
	if len(data) == 0 {
		data = []byte("null") // no JSON payload is empty (journal refuses it); the body stays JSON
	}
	b = append(b, data...)
	return append(b, '}')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil {
		panic("webhook: a string does not encode as JSON: " + err.Error()) // cannot happen
	}
	return append(b, q...)
}

package operator

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
)

// TestRecordInputReadsThePayloadByOneRule: the payload rule every operator
// surface shares (the HTTP API's records, append --file's lines), and the
// errors that name the record's field.
func TestRecordInputReadsThePayloadByOneRule(t *testing.T) {
	for _, c := range []struct {
		name, in string
		payload  string // stored bytes, when accepted
		err      string // the error, when refused
	}{
		{"JSON for the default type, as given", `{"id":"a","kind":"k","payload":{"total": 42}}`, `{"total": 42}`, ""},
		{"JSON for a +json type", `{"id":"a","kind":"k","content_type":"application/activity+json","payload":[1]}`, `[1]`, ""},
		{"a string of a text type is its text", `{"id":"a","kind":"k","content_type":"text/plain; charset=utf-8","payload":"h\u00e9\n"}`, "hé\n", ""},
		{"base64 is bytes of any type", `{"id":"a","kind":"k","content_type":"image/png","payload_base64":"AP8K"}`, "\x00\xff\n", ""},
		{"no payload of a text type is no bytes", `{"id":"a","kind":"k","content_type":"text/plain"}`, "", ""},
		{"no payload of a JSON type is the journal's to refuse", `{"id":"a","kind":"k"}`, "", ""},
		{"other JSON for a text type", `{"id":"a","kind":"k","content_type":"text/plain","payload":{"a":1}}`, "",
			`invalid records[2].payload: is JSON but content_type is "text/plain": give its text as a JSON string, or its bytes in payload_base64`},
		{"both payloads", `{"id":"a","kind":"k","payload":{},"payload_base64":"AA=="}`, "",
			"invalid records[2].payload: and payload_base64 are both given: give one, not both"},
		{"bad base64", `{"id":"a","kind":"k","content_type":"image/png","payload_base64":"***"}`, "",
			"invalid records[2].payload_base64: is not base64 (RFC 4648, padded)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r RecordInput
			require.NoError(t, DecodeJSON(bytes.NewReader([]byte(c.in)), &r))
			e, err := r.Entry("records[2]")
			if c.err != "" {
				require.ErrorIs(t, err, journal.ErrInvalid)
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.payload, string(e.Payload))
		})
	}
}

// TestDecodeJSONRefusesWhatItWouldLose: an unknown field, a second value
// and trailing bytes are refused, named, as a field of the wrong type is.
func TestDecodeJSONRefusesWhatItWouldLose(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"a","evil":1}`:           `invalid record: has unknown field "evil"`,
		`{"id":"a"} {"id":"b"}`:         "invalid record: holds more than one JSON value: give one",
		`{"id":"a"}}`:                   "invalid record: holds more than one JSON value: give one",
		`{"id":"a","final":"yes"}`:      "invalid record.final: is a JSON string; want true or false",
		`{"id":"a","payload":{`:         "invalid record: is not valid JSON: it ends too soon",
		``:                              "invalid record: is empty: want a JSON object",
		`{"id":"a","traceparent":7}`:    "invalid record.traceparent: is a JSON number; want a string",
		`{"id":"a","payload_base64":1}`: "invalid record.payload_base64: is a JSON number; want a string",
	} {
		var r RecordInput
		err := JSONError("record", DecodeJSON(bytes.NewReader([]byte(in)), &r))
		require.ErrorIs(t, err, journal.ErrInvalid, in)
		require.EqualError(t, err, want, in)
	}
}

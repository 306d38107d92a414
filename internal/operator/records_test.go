package operator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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
			`invalid records[2].payload: is a JSON object, but content_type "text/plain" takes a JSON string (its text) or payload_base64 (its bytes)`},
		{"both payloads", `{"id":"a","kind":"k","payload":{},"payload_base64":"AA=="}`, "",
			"invalid records[2].payload: is given with payload_base64: give one, not both"},
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

// TestDecodeJSONRefusesWhatItWouldLose: an unknown field, a second value,
// trailing bytes, bytes that are not UTF-8 (encoding/json would replace
// them) and a repeated key (it would keep the last) are refused, named, as
// a field of the wrong type is.
func TestDecodeJSONRefusesWhatItWouldLose(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"a","evil":1}`:           `invalid record: has unknown field "evil"`,
		`{"id":"a"} {"id":"b"}`:         "invalid record: holds more than one JSON value: give one",
		`{"id":"a"}}`:                   "invalid record: holds more than one JSON value: give one",
		`{"id":"a","final":"yes"}`:      "invalid final: is a JSON string; want true or false",
		`{"id":"a","payload":{`:         "invalid record: is not valid JSON: it ends too soon",
		``:                              "invalid record: is empty: want a JSON object",
		`{"id":"a","traceparent":7}`:    "invalid traceparent: is a JSON number; want a string",
		`{"id":"a","payload_base64":1}`: "invalid payload_base64: is a JSON number; want a string",
		"{\"id\":\"a\xff\"}":            "invalid record: is not valid UTF-8 (byte 9): send text as UTF-8, other bytes as a record's payload_base64",
		`{"id":"a","id":"b"}`:           `invalid record: has the key "id" twice: give it once`,
		`{"id":"a","payload":{"x":[{"y":1,"y":2}]}}`:              `invalid payload.x[0]: has the key "y" twice: give it once`,
		`{"id":"a","payload":[1,"[,{\"",{"a\u0062":0,"ab" : 1}]}`: `invalid payload[2]: has the key "ab" twice: give it once`,
		`{"id":"a","payload":{"x":{"y":1},"x":2}}`:                `invalid payload: has the key "x" twice: give it once`,
		`{"id":"a","payload":{"x":{"y":1},"y":{"y":2,"y":3}}}`:    `invalid payload.y: has the key "y" twice: give it once`,
		`{"id":"a","payload":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"k3":0}}`: `invalid payload: has the key "k3" twice: give it once`,
		// encoding/json reads a lone surrogate as U+FFFD: "a\udcff" and "a\udcfe" would be one id.
		`{"id":"a\udcff"}`:                        `invalid id: escapes half a UTF-16 surrogate pair alone (\udcff), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`,
		`{"id":"a","kind":"\uD83D"}`:              `invalid kind: escapes half a UTF-16 surrogate pair alone (\uD83D), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`,
		`{"id":"a","kind":"\ud83d\u0041"}`:        `invalid kind: escapes half a UTF-16 surrogate pair alone (\ud83d), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`,
		`{"id":"a","payload":{"x":["\\\udc00"]}}`: `invalid payload.x[0]: escapes half a UTF-16 surrogate pair alone (\udc00), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`,
		`{"id":"a","payload":{"\udfff":1}}`:       `invalid payload: has a key escaping half a UTF-16 surrogate pair alone (\udfff), which JSON decoders read as U+FFFD: escape both halves (\ud83d\ude00), or send the character as UTF-8`,
		// A struct's field takes a key whatever its case: both would be read into it.
		`{"id":"a","ID":"b"}`:                   `invalid record: has the keys "id" and "ID", which name one field whatever the case: give it once`,
		`{"kind":"a","id":"x","\u212Aind":"b"}`: `invalid record: has the keys "kind" and "Kind", which name one field whatever the case: give it once`,
	} {
		var r RecordInput
		err := JSONError("record", DecodeJSON(bytes.NewReader([]byte(in)), &r))
		require.ErrorIs(t, err, journal.ErrInvalid, in)
		require.EqualError(t, err, want, in)
	}
}

// TestDecodeJSONKeepsWhatIsData: a payload's keys are data, compared
// exactly, and a surrogate pair, or an escaped backslash before a "u", is
// no lone surrogate.
func TestDecodeJSONKeepsWhatIsData(t *testing.T) {
	for _, in := range []string{
		`{"id":"a","payload":{"url":1,"URL":2,"Url":{"url":3,"URL":4}}}`,
		`{"id":"a\ud83d\ude00","payload":["\\udcff","\uDBFF\uDFFF"]}`,
		`{"id":"a","payload":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"K3":16}}`,
	} {
		var r RecordInput
		require.NoError(t, DecodeJSON(bytes.NewReader([]byte(in)), &r), in)
	}
	// Past 16 keys an object's are compared by map: a struct's folded still.
	var fields []reflect.StructField
	for i := range 20 {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[int](), Tag: reflect.StructTag(fmt.Sprintf(`json:"f%d"`, i))})
	}
	var body strings.Builder
	body.WriteString(`{"r":{`)
	for i := range 20 {
		fmt.Fprintf(&body, `"f%d":%d,`, i, i)
	}
	body.WriteString(`"F17":0}}`)
	v := reflect.New(reflect.MapOf(reflect.TypeFor[string](), reflect.StructOf(fields))).Interface()
	err := JSONError("body", DecodeJSON(strings.NewReader(body.String()), v))
	require.EqualError(t, err, `invalid r: has the keys "f17" and "F17", which name one field whatever the case: give it once`)
}

// TestOutputRecordReadsBackAsTheSameEntry: a record as records --json
// prints it, read back as an append --file line reads it, is the entry it
// was appended from: text, bytes that are not UTF-8 and a trace context
// exactly, JSON by value (it is printed compacted).
func TestOutputRecordReadsBackAsTheSameEntry(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, e := range []journal.Entry{
		{ID: "j", Kind: "k", ContentType: "application/json", Payload: []byte(`{"a":[1,"<&>"]}`)},
		{ID: "t", Kind: "k", ContentType: "text/plain; charset=utf-8", Payload: []byte("h\u00e9llo\n\u2028\"<b>\"")},
		{ID: "b", Kind: "k", ContentType: "image/png", Payload: []byte{0x89, 'P', 'N', 'G', 0xff}},
		{ID: "e", Kind: "k", ContentType: "text/plain", Payload: []byte{}, Final: true, Traceparent: tp, Tracestate: "v=1"},
	} {
		out, err := json.Marshal(OutputRecord(journal.Record{Stream: "s", Seq: 1, ID: e.ID, Kind: e.Kind, ContentType: e.ContentType,
			Payload: e.Payload, Final: e.Final, Traceparent: e.Traceparent, Tracestate: e.Tracestate}))
		require.NoError(t, err)
		var line struct {
			RecordInput
			Stream     string          `json:"stream"`
			Seq        uint64          `json:"seq"`
			AppendedAt json.RawMessage `json:"appended_at"`
		}
		require.NoError(t, DecodeJSON(bytes.NewReader(out), &line), "%s", out)
		got, err := line.Entry("")
		require.NoError(t, err, "%s", out)
		if journal.IsJSONContentType(e.ContentType) {
			require.JSONEq(t, string(e.Payload), string(got.Payload), "JSON keeps its value, not its bytes: %s", out)
		} else {
			require.Equal(t, string(e.Payload), string(got.Payload), "text and bytes are kept exactly: %s", out)
		}
		got.Payload = e.Payload
		require.Equal(t, e, got, "%s", out)
	}
}

// BenchmarkDecodeJSON decodes an API body of 50,000 small records (6.1 MB,
// escapes in every payload), its checks included.
func BenchmarkDecodeJSON(b *testing.B) {
	var body bytes.Buffer
	body.WriteString(`{"stream": "orders/1", "records": [`)
	for i := range 50_000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"id": "evt-%d", "kind": "order.paid", "payload": {"order": %d, "total": "12.50", "note": "caf\u00e9 \ud83d\ude00"}}`, i, i)
	}
	body.WriteString(`]}`)
	b.SetBytes(int64(body.Len()))
	for b.Loop() {
		var v struct {
			Stream  string        `json:"stream"`
			Records []RecordInput `json:"records"`
		}
		if err := DecodeJSON(bytes.NewReader(body.Bytes()), &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSONRecord decodes one record with a 256-byte JSON
// payload, as the bench's httpappend workload POSTs it: what each API
// append pays for the checks.
func BenchmarkDecodeJSONRecord(b *testing.B) {
	payload := `{"type":"order.updated","order":7,"total_cents":1007,"items":[{"sku":"a","qty":1}],"note":"` + strings.Repeat("x", 163) + `"}`
	raw := []byte(`{"id":"w0-7","kind":"order.updated","payload":` + payload + `}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var r RecordInput
		if err := DecodeJSON(bytes.NewReader(raw), &r); err != nil {
			b.Fatal(err)
		}
	}
}

package projconfig_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/transport"
)

type config struct {
	Token   string   `json:"token,omitempty"`
	Secrets []string `json:"secrets"`
	On      bool     `json:"on"`
}

func TestDecode(t *testing.T) {
	var c config
	require.NoError(t, projconfig.Decode([]byte(`{"token":"t0k3n","secrets":["a"],"on":true}`), &c))
	require.Equal(t, config{Token: "t0k3n", Secrets: []string{"a"}, On: true}, c)
	require.NoError(t, projconfig.Decode(nil, &config{}), "empty is {}")

	for raw, want := range map[string]string{
		`{"token":"s3cret-value","extra":1}`:    `invalid config: has an unknown key "extra" (known: token, secrets, on)`,
		`{"secrets":"s3cret-value"}`:            "invalid config.secrets: must be a JSON array of strings, not string",
		`{"on":"s3cret-value"}`:                 "invalid config.on: must be a JSON boolean, not string",
		`{"token":1}`:                           "invalid config.token: must be a JSON string, not number",
		`{"` + strings.Repeat("k", 70) + `":1}`: `invalid config: has an unknown key "` + strings.Repeat("k", 64) + `"... (known: token, secrets, on)`,
		"{\"a\\u0000\\nb\":1}":                  `invalid config: has an unknown key "a\x00\nb" (known: token, secrets, on)`,
		`{"token":"s3cret-value"} {}`:           "invalid config: has data after the JSON object",
		`["s3cret-value"]`:                      "invalid config: is not a JSON object",
		`{"token":"s3cret-value`:                "invalid config: is not a JSON object",
	} {
		err := projconfig.Decode([]byte(raw), &config{})
		require.ErrorIs(t, err, journal.ErrInvalid, raw)
		require.EqualError(t, err, want, raw)
		require.NotContains(t, err.Error(), "s3cret", "an error never quotes the config")
	}
}

// nested is a config with what strictjson walks into: a struct in an
// array, whose keys fold, and a map, whose keys are data.
type nested struct {
	Secrets  []string `json:"secrets"`
	Retiring []struct {
		Secret string `json:"secret"`
	} `json:"retiring"`
	Headers map[string]string `json:"headers"`
}

// TestDecodeRefusesWhatEncodingJSONWouldMergeOrReplace: a key given twice,
// keys that name one field whatever their case, a lone surrogate and bytes
// that are not UTF-8 (of which encoding/json keeps one value, or reads
// U+FFFD) are refused naming the key, never quoting a value; so is a
// second closing brace, which the decoder's More let through.
func TestDecodeRefusesWhatEncodingJSONWouldMergeOrReplace(t *testing.T) {
	notUTF8 := "{\"secrets\":[\"s3cret\xff\"]}"
	for raw, want := range map[string]string{
		`{"secrets":["s3cret-a"],"secrets":["s3cret-b"]}`: "invalid config.secrets: is given twice: give it once",
		`{"secrets":["s3cret-a"],"Secrets":["s3cret-b"]}`: `invalid config.secrets: is given again as "Secrets", the same key whatever the case: give it once`,
		// encoding/json folds as Unicode does: U+017F, long s, is an s.
		`{"secrets":["s3cret-a"],"\u017fecrets":["s3cret-b"]}`:                           `invalid config.secrets: is given again as "ſecrets", the same key whatever the case: give it once`,
		`{"retiring":[{"secret":"s3cret-a"},{"secret":"s3cret-b","SECRET":"s3cret-c"}]}`: `invalid config.retiring[1].secret: is given again as "SECRET", the same key whatever the case: give it once`,
		`{"headers":{"X-A":"s3cret-a","X-A":"s3cret-b"}}`:                                "invalid config.headers.X-A: is given twice: give it once",
		`{"headers":{"a.b\n":"s3cret-a","a.b\n":"s3cret-b"}}`:                            `invalid config.headers["a.b\n"]: is given twice: give it once`,
		`{"secrets":["s3cret-a\udcff"]}`:                                                 "invalid config.secrets[0]: escapes half a UTF-16 surrogate pair alone, which JSON decoders read as U+FFFD: escape both halves, or write the character as UTF-8",
		`{"headers":{"X-A":"s3cret\ud83d\u0041"}}`:                                       "invalid config.headers.X-A: escapes half a UTF-16 surrogate pair alone, which JSON decoders read as U+FFFD: escape both halves, or write the character as UTF-8",
		`{"headers":{"\ud800":"s3cret"}}`:                                                "invalid config.headers: has a key escaping half a UTF-16 surrogate pair alone, which JSON decoders read as U+FFFD: escape both halves, or write the character as UTF-8",
		notUTF8:                                                                          "invalid config.secrets[0]: is not valid UTF-8 (byte 20 of the config)",
		"{\"headers\":{\"X-\xfe\":\"s3cret\"}}":                                          "invalid config.headers: has a key that is not valid UTF-8 (byte 16 of the config)",
		"{\"secrets\":[\"s3cret\xff":                                                     "invalid config: is not valid UTF-8 (byte 20 of the config)",
		`{"secrets":["s3cret-a"]}}`:                                                      "invalid config: has data after the JSON object",
	} {
		err := projconfig.Decode([]byte(raw), &nested{})
		require.ErrorIs(t, err, journal.ErrInvalid, raw)
		require.EqualError(t, err, want, raw)
		require.NotContains(t, err.Error(), "s3cret", "an error never quotes the config")
	}
	require.Equal(t, byte(0xff), notUTF8[19], "byte 20, from 1, is the one")
}

// TestDecodeKeepsValidEscapesAndMapKeys: a surrogate pair, an escaped
// backslash before a u, and map keys that differ in case only (data, which
// the map keeps apart) decode as encoding/json decodes them.
func TestDecodeKeepsValidEscapesAndMapKeys(t *testing.T) {
	raw := `{"secrets":["a\ud83d\ude00","\\udcff","\uDBFF\uDFFF","c:\\\\"],"retiring":[{"secret":"x"},{"secret":"y"}],"headers":{"X-A":"1","x-a":"2"}}`
	var got, want nested
	require.NoError(t, projconfig.Decode([]byte(raw), &got))
	require.NoError(t, json.Unmarshal([]byte(raw), &want))
	require.Equal(t, want, got)
	require.Equal(t, []string{"a\U0001F600", `\udcff`, "\U0010FFFF", `c:\\`}, got.Secrets)
	require.Equal(t, map[string]string{"X-A": "1", "x-a": "2"}, got.Headers)
}

// BenchmarkDecode decodes a webhook-sized config (two secrets, a retiring
// one, two headers): what a projection's cache miss costs.
func BenchmarkDecode(b *testing.B) {
	type retiring struct {
		Secret string    `json:"secret"`
		Until  time.Time `json:"until"`
	}
	type webhook struct {
		Secrets  []string   `json:"secrets"`
		Retiring []retiring `json:"retiring,omitempty"`
		Envelope bool       `json:"envelope,omitempty"`
		transport.Endpoint
	}
	raw := []byte(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","whsec_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],` +
		`"retiring":[{"secret":"whsec_old0000000000000000000000000000","until":"2026-12-31T23:59:59Z"}],` +
		`"envelope":true,"headers":{"X-Tenant":"acme","Authorization":"Bearer t0k3n\u00e9"}}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var c webhook
		if err := projconfig.Decode(raw, &c); err != nil {
			b.Fatal(err)
		}
	}
}

package projconfig_test

import (
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

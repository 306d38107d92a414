package webhook_test

import (
	"fmt"

	"github.com/heraldpush/herald/projection/webhook"
)

// A registration's config, as the CLI builds it from --secret flags: the
// stored JSON holds the secrets, printing the Config never does.
func ExampleConfig_Encode() {
	c := webhook.Config{Secrets: []string{
		"whsec_tS7gVmFt0+1ToUyWqXAMq8TLQH+Fm4WyuxAzBQ+HZA8=",
		"whsec_HyDsgbhT+/cQVlPSNwmKZN3ToOkElc+f",
	}}
	raw, err := c.Encode()
	fmt.Println(string(raw), err)
	fmt.Println(c)
	_, err = webhook.Config{Secrets: []string{"hunter2"}}.Encode()
	fmt.Println(err)
	// Output:
	// {"secrets":["whsec_tS7gVmFt0+1ToUyWqXAMq8TLQH+Fm4WyuxAzBQ+HZA8=","whsec_HyDsgbhT+/cQVlPSNwmKZN3ToOkElc+f"]} <nil>
	// webhook.Config{Secrets: [2 redacted], Envelope: false}
	// invalid config.secrets[0]: does not start with "whsec_" (a Standard Webhooks secret is whsec_ and base64)
}

package activitypub_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/heraldpush/herald/projection/activitypub"
)

// A registration's config, as the CLI builds it from --key-id and
// --private-key-file: the stored JSON holds the key, printing the Config
// never does.
func ExampleConfig_Encode() {
	pemText, err := os.ReadFile(filepath.Join("..", "..", "testdata", "activitypub", "alice-test-key.pem"))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := activitypub.Config{
		KeyID:      "https://example.com/users/alice#main-key",
		PrivateKey: string(pemText),
		Actors:     []string{"https://remote.example/users/bob"},
	}
	raw, err := c.Encode()
	fmt.Println(len(raw) > len(pemText), err)
	fmt.Println(c)
	c.KeyID = "alice"
	_, err = c.Encode()
	fmt.Println(err)
	// Output:
	// true <nil>
	// activitypub.Config{KeyID: "https://example.com/users/alice#main-key", PrivateKey: [redacted, 1704 bytes], SignatureScheme: "", ProofKeyID: "", ProofPrivateKey: <none>, Actors: ["https://remote.example/users/bob"], Followers: []}
	// invalid config.key_id: "alice" is not an absolute http or https URI
}

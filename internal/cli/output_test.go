package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://remote.example/users/alice/inbox":                             "https://remote.example/users/alice/inbox",
		"https://billing.example/hooks?token=s3cr3t":                           "https://billing.example/hooks?…",
		"https://discord.example/api/webhooks/123456789012345678/AbCdEfGhIjKl": "https://discord.example/api/webhooks/…/AbCdEfGhIjKl",
		"https://hooks.example/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX":    "https://hooks.example/services/T000/B000/…",
		"https://a.example/?": "https://a.example/",
	} {
		require.Equal(t, want, redactURL(raw), raw)
	}
}

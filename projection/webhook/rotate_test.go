package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldpush/herald/journal"
)

func TestNewSecretIs32RandomBytes(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	key, err := decodeSecret(a)
	if err != nil || len(key) != 32 {
		t.Fatalf("NewSecret() decodes to %d bytes, %v; want 32", len(key), err)
	}
	if a == b {
		t.Error("two NewSecret calls gave the same secret")
	}
	if _, err := standardwebhooks.NewWebhook(a); err != nil {
		t.Errorf("the Standard Webhooks library refuses NewSecret's secret: %v", err)
	}
}

// signedAt returns the headers the projection signs rec with, for cfg, at at.
func signedAt(t *testing.T, cfg Config, rec journal.Record, at time.Time) (http.Header, []byte) {
	t.Helper()
	raw, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := New().Messages(context.Background(), rec, registration("https://hooks.example/", raw))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://hooks.example/", nil)
	if err := msgs[0].Signer.Sign(req, msgs[0].Body, at); err != nil {
		t.Fatal(err)
	}
	return req.Header, msgs[0].Body
}

// TestRotatedSecretOverlapsUntilTheOldExpires signs with a rotated config
// at instants before and after the old secret's expiry, and verifies with
// the Standard Webhooks library as receivers holding only the old or only
// the new secret would. Expiry is judged by the attempt's at alone.
func TestRotatedSecretOverlapsUntilTheOldExpires(t *testing.T) {
	old := NewSecret()
	rotatedAt := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	cfg, fresh, err := Config{Secrets: []string{old}}.Rotate(rotatedAt, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Secrets) != 1 || cfg.Secrets[0] != fresh || fresh == old {
		t.Fatalf("Rotate: secrets %d, new one first: %t; want the new secret alone", len(cfg.Secrets), cfg.Secrets[0] == fresh)
	}
	if len(cfg.Retiring) != 1 || cfg.Retiring[0].Secret != old || !cfg.Retiring[0].Until.Equal(rotatedAt.Add(24*time.Hour)) {
		t.Fatalf("Rotate: retiring = %d, want the old secret until %v", len(cfg.Retiring), rotatedAt.Add(24*time.Hour))
	}
	verifier := func(s string) *standardwebhooks.Webhook {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		return wh
	}
	holdsOld, holdsNew := verifier(old), verifier(fresh)
	rec := journal.Record{Stream: "tenant/42", Seq: 1, ID: "evt-1", Kind: "order.paid", Payload: []byte(`{"id":1}`)}
	for _, c := range []struct {
		at            time.Time
		oldOK, newOK  bool
		wantSignature int
	}{
		{rotatedAt, true, true, 2},
		{rotatedAt.Add(24*time.Hour - time.Second), true, true, 2},
		{rotatedAt.Add(24 * time.Hour), false, true, 1},
		{rotatedAt.Add(48 * time.Hour), false, true, 1},
	} {
		h, body := signedAt(t, cfg, rec, c.at)
		if n := len(strings.Fields(h.Get("Webhook-Signature"))); n != c.wantSignature {
			t.Errorf("at %v: %d signatures, want %d", c.at, n, c.wantSignature)
		}
		// The library's tolerance is judged against the wall clock; the
		// timestamp here is the caller's at, so verify without it.
		if err := holdsOld.VerifyIgnoringTimestamp(body, h); (err == nil) != c.oldOK {
			t.Errorf("at %v: a receiver holding only the old secret verifies: %v; want ok=%t", c.at, err, c.oldOK)
		}
		if err := holdsNew.VerifyIgnoringTimestamp(body, h); (err == nil) != c.newOK {
			t.Errorf("at %v: a receiver holding only the new secret verifies: %v; want ok=%t", c.at, err, c.newOK)
		}
	}

	again, _, err := cfg.Rotate(rotatedAt.Add(25*time.Hour), 0)
	if err != nil || len(again.Retiring) != 0 || len(again.Secrets) != 1 {
		t.Errorf("a second Rotate after expiry with expire-old 0 = %d secrets, %d retiring, %v; want 1 and none", len(again.Secrets), len(again.Retiring), err)
	}
}

func TestRotateRefusesBadExpiryAndTooManySecrets(t *testing.T) {
	now := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	cfg := Config{Secrets: []string{NewSecret()}}
	for _, d := range []time.Duration{-time.Second, MaxExpireOld + time.Second} {
		got, _, err := cfg.Rotate(now, d)
		if inv, ok := errors.AsType[*journal.InvalidError](err); !ok || inv.Field != "expire_old" || len(got.Retiring) != 0 {
			t.Errorf("Rotate(%v) = %v; want an InvalidError of expire_old, nothing changed", d, err)
		}
	}
	for range MaxSecrets - 1 {
		var err error
		if cfg, _, err = cfg.Rotate(now, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cfg.Rotate(now, time.Hour); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Rotate past %d secrets = %v; want refused", MaxSecrets, err)
	}
	if _, _, err := cfg.Rotate(now.Add(time.Hour), time.Hour); err != nil {
		t.Errorf("Rotate once the retiring secrets expired = %v; want them dropped and room made", err)
	}
	bad := Config{Secrets: []string{NewSecret()}, Retiring: []Retiring{{Secret: NewSecret()}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "config.retiring[0].until") {
		t.Errorf("a retiring secret without until: Validate = %v", err)
	}
}

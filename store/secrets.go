package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldpush/herald/seal"
)

// ErrNoKeyring: a config holding a secret was given to a store that must
// seal it and has no keyring.
var ErrNoKeyring = errors.New("a config holding a secret is stored only sealed, and no keyring was given: " +
	"make one with `herald keyring new --keyring-file PATH` and give it as --keyring-file or HERALD_KEYRING")

// SecretKeys are the config keys whose values are secrets in the
// projections herald ships (webhook secrets and retiring ones, bearer
// tokens, A2A credentials, ActivityPub private keys) and in every
// projection's transport.Endpoint (header values, a client key, a proxy's
// password). With a keyring the whole config is
// sealed whatever its keys; these decide only what a store that requires a
// keyring refuses without one.
var SecretKeys = []string{"secrets", "retiring", "token", "credentials", "private_key", "headers", "client_key", "proxy"}

// Sealer is the one place the SQL stores seal registrations' configs at
// rest: each store seals a config with SealConfig before writing it and
// opens what it reads with OpenConfig. With a keyring the whole config is
// sealed (package seal), bound to the registration's stream and id; without
// one it is kept as given, unless Required and it holds a secret.
//
// A config stored in clear (before a keyring was given) still opens, as
// itself, and Reseal seals it.
type Sealer struct {
	Keyring  *seal.Keyring // nil: configs are kept as given
	Required bool          // refuse a config with a secret (SecretKeys) without a Keyring: ErrNoKeyring
}

// configAD binds a sealed config to its registration.
func configAD(k Key) []byte { return seal.AD("herald registration config", k.Stream, k.ID) }

// SealConfig returns what a store keeps for registration k's config c: nil
// for none, c sealed with a keyring, else c. It fails with ErrNoKeyring
// when Required and c holds a secret without a keyring.
func (s Sealer) SealConfig(k Key, c Config) ([]byte, error) {
	switch {
	case len(c) == 0:
		return nil, nil
	case s.Keyring != nil:
		return s.Keyring.Seal(c, configAD(k)), nil
	case s.Required && HoldsSecret(c):
		return nil, fmt.Errorf("register %s: %w", Name(k.Stream, k.ID), ErrNoKeyring)
	}
	return []byte(c), nil
}

// subscriptionAD binds a sealed config to its subscription: the one config
// every registration the subscription made reads (their rows hold none).
func subscriptionAD(prefix, id string) []byte {
	return seal.AD("herald subscription config", prefix, id)
}

// SealSubscription is SealConfig for subscription prefix/id's config.
func (s Sealer) SealSubscription(prefix, id string, c Config) ([]byte, error) {
	switch {
	case len(c) == 0:
		return nil, nil
	case s.Keyring != nil:
		return s.Keyring.Seal(c, subscriptionAD(prefix, id)), nil
	case s.Required && HoldsSecret(c):
		return nil, fmt.Errorf("subscribe %s: %w", SubscriptionName(prefix, id), ErrNoKeyring)
	}
	return []byte(c), nil
}

// OpenSubscription is OpenConfig for subscription prefix/id's config.
func (s Sealer) OpenSubscription(prefix, id string, stored []byte) (Config, error) {
	return s.open(stored, subscriptionAD(prefix, id), SubscriptionName(prefix, id))
}

// OpenSubscriptions opens each listed subscription's config in place
// (OpenSubscription), or returns err if not nil: a store's Subscriptions
// answers with the list, or the first error and none.
func (s Sealer) OpenSubscriptions(list []SubscriptionStatus, err error) ([]SubscriptionStatus, error) {
	for i := 0; err == nil && i < len(list); i++ {
		list[i].Config, err = s.OpenSubscription(list[i].Prefix, list[i].ID, list[i].Config)
	}
	if err != nil {
		return nil, err
	}
	return list, nil
}

// SubscribeOver checks Subscribe of sub over was (CheckSubscribe) against
// stored, what a store's Subscriptions lists of its prefix and id (configs
// as stored), and reports whether it changes how the registrations of the
// subscription are delivered (Registration.SameDelivery). A new one changes
// none; a stored config that no longer opens counts as changed.
func (s Sealer) SubscribeOver(sub, was Subscription, stored []SubscriptionStatus) (changes bool, err error) {
	var old *Subscription
	var open error
	for _, st := range stored {
		if st.Prefix == sub.Prefix && st.ID == sub.ID {
			old = &st.Subscription
			old.Config, open = s.OpenSubscription(old.Prefix, old.ID, old.Config)
		}
	}
	if err := CheckSubscribe(sub, was, old, open); err != nil {
		return false, err
	}
	return old != nil && (open != nil || !sub.Template("").SameDelivery(old.Template(""))), nil
}

// OpenRegistration opens r.Config as stored: its own, or, for one a
// subscription made, the subscription's (bound to the subscription).
func (s Sealer) OpenRegistration(r Registration) (Config, error) {
	if r.Subscription != "" {
		return s.OpenSubscription(r.Subscription, r.ID, r.Config)
	}
	return s.OpenConfig(r.Key(), r.Config)
}

// OpenConfig returns the config that SealConfig kept as stored for
// registration k. A value sealed under a key the keyring does not hold, or
// that does not open (changed, moved from another row), is an error naming
// the registration and the key id.
func (s Sealer) OpenConfig(k Key, stored []byte) (Config, error) {
	return s.open(stored, configAD(k), "registration "+Name(k.Stream, k.ID))
}

func (s Sealer) open(stored, ad []byte, what string) (Config, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	if !seal.IsSealed(stored) {
		return Config(stored), nil // kept in clear: before a keyring, or without one
	}
	c, err := s.Keyring.Open(stored, ad)
	if err != nil {
		hint := ""
		if errors.Is(err, seal.ErrUnknownKey) {
			hint = " (give the keyring that holds it: --keyring-file or HERALD_KEYRING)"
		}
		return nil, fmt.Errorf("open the config of %s: %w%s", what, err, hint)
	}
	return c, nil
}

// Open opens each status's config in place (OpenConfig). A config that
// does not open is that registration's alone: its Config becomes nil and
// its ConfigError says why, so a list still shows it and a claim still
// serves the others (a worker fails its attempts with that error).
func (s Sealer) Open(sts []Status) {
	for i := range sts {
		s.openIn(&sts[i].Registration)
	}
}

// OpenResends is Open for claimed resends' registrations.
func (s Sealer) OpenResends(rs []Resend) {
	for i := range rs {
		s.openIn(&rs[i].Registration)
	}
}

func (s Sealer) openIn(r *Registration) {
	c, err := s.OpenRegistration(*r)
	if err != nil {
		r.Config, r.ConfigError = nil, err.Error()
		return
	}
	r.Config = c
}

// Reseal returns registration k's stored config sealed under the primary
// key, and whether that changed it: false for none, or one sealed under the
// primary already. It needs a keyring.
func (s Sealer) Reseal(k Key, stored []byte) ([]byte, bool, error) {
	return s.resealWith(stored, func(b []byte) ([]byte, error) { return s.OpenConfig(k, b) },
		func(b []byte) ([]byte, error) { return s.Keyring.Seal(b, configAD(k)), nil })
}

// HoldsSecret reports whether config c has a non-empty value under one of
// SecretKeys, in any case: a projection's decode reads "Secrets" as
// "secrets" (encoding/json's fold, strings.EqualFold's).
func HoldsSecret(c Config) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(c, &obj) != nil {
		return len(c) > 0 // not an object: assume the worst
	}
	for k, v := range obj {
		if !slices.ContainsFunc(SecretKeys, func(s string) bool { return strings.EqualFold(s, k) }) {
			continue
		}
		switch string(v) {
		case "null", `""`, "[]", "{}":
		default:
			return true
		}
	}
	return false
}

// Resealer is a store that re-seals its registrations' configs under its
// keyring's primary key (herald reseal).
type Resealer interface {
	// Reseal re-seals the configs of up to limit registrations after
	// after (in key order, CompareKeys), each not sealed under the primary
	// key yet, a registration changed meanwhile left for the next pass.
	Reseal(ctx context.Context, after Key, limit int) (ResealPage, error)
	// ResealOthers re-seals in one write what else the store seals (actor
	// keys, subscriptions' configs) not under the primary key yet, and
	// returns how many it sealed anew. They are few (an operator's keys, a
	// tenant's subscriptions), never one per registration.
	ResealOthers(ctx context.Context) (int, error)
}

// resealWith returns stored sealed anew under the primary key, through
// open and reseal, and whether that changed it: false for nothing stored,
// or a value sealed under the primary already.
func (s Sealer) resealWith(stored []byte, open, reseal func([]byte) ([]byte, error)) ([]byte, bool, error) {
	if s.Keyring == nil {
		return nil, false, ErrNoKeyring
	}
	if id, _ := seal.KeyID(stored); len(stored) == 0 || id == s.Keyring.Primary() {
		return stored, false, nil
	}
	plain, err := open(stored)
	if err != nil {
		return nil, false, err
	}
	out, err := reseal(plain)
	return out, err == nil, err
}

// Sealed is a secret a store keeps beside the registrations' configs, as
// stored: an actor key's private key (Prefix empty) or a subscription's
// config.
type Sealed struct {
	Prefix, ID string
	Stored     []byte
}

// ResealOthers is Resealer.ResealOthers but for the store's own reads and
// writes: it seals anew under the primary key the actor keys' and the
// subscriptions' secrets read (keys, subs) not sealed under it yet, writes
// each through write (key: an actor key's), and returns how many it wrote.
func (s Sealer) ResealOthers(keys, subs []Sealed, write func(key bool, r Sealed, out []byte) error) (int, error) {
	n := 0
	for i, r := range slices.Concat(keys, subs) {
		key := i < len(keys)
		open := func(b []byte) ([]byte, error) { return s.OpenSubscription(r.Prefix, r.ID, b) }
		sealAnew := func(b []byte) ([]byte, error) { return s.SealSubscription(r.Prefix, r.ID, Config(b)) }
		if key {
			open = func(b []byte) ([]byte, error) { return s.OpenActorKey(r.ID, b) }
			sealAnew = func(b []byte) ([]byte, error) { return s.SealActorKey(r.ID, b) }
		}
		out, changed, err := s.resealWith(r.Stored, open, sealAnew)
		if err == nil && changed {
			if err = write(key, r, out); err == nil {
				n++
			}
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ResealPage is one page of Reseal.
type ResealPage struct {
	Read     int  `json:"read"`     // registrations read
	Resealed int  `json:"resealed"` // configs sealed anew under the primary key
	Last     Key  `json:"last"`     // the last read: the next page's after
	More     bool `json:"more"`     // a page may follow
}

package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/store"
)

// RotatedView answers a secret's rotation: the registration, with until
// when the old secrets sign, and its new secret (shown in this answer only).
type RotatedView struct {
	RegistrationView
	Secret string `json:"secret"`
}

// DefaultExpireOld is how long a rotated secret keeps signing unless told:
// a day, as Svix keeps one, for a receiver to deploy the new secret.
const DefaultExpireOld = 24 * time.Hour

// ParseExpireOld reads how long a rotation keeps the old secrets signing,
// as field (a flag, an API or form field) gives it: a duration or whole
// days (store.ParseDays: "24h", "3d", "0s"), 0 to webhook.MaxExpireOld;
// "" is DefaultExpireOld. Errors name field and the range.
func ParseExpireOld(field, s string) (time.Duration, error) {
	if s == "" {
		return DefaultExpireOld, nil
	}
	return store.ParseDays(field, s, 0, webhook.MaxExpireOld)
}

// RotateSecret gives webhook registration stream/id a new secret
// (webhook.Config.Rotate at now, keeping the old ones signing for
// expireOld), through Update: a rotation never undoes an update made
// meanwhile, nor is undone by one, and the secret it answers is the one
// stored. Errors: Update's (journal.ErrNotFound, journal.ErrConflict), or
// journal.ErrInvalid for another namespace or a bad expireOld
// ("expire_old").
func RotateSecret(ctx context.Context, s store.Store, stream, id string, now time.Time, expireOld time.Duration) (RotatedView, error) {
	var secret string
	st, err := Update(ctx, s, stream, id, func(was store.Status) (store.Registration, error) {
		reg := was.Registration
		if was.Namespace != webhook.Namespace {
			return reg, journal.Invalid("namespace", "%s is a %s registration: only webhook registrations have secrets herald rotates",
				store.Name(stream, id), was.Namespace)
		}
		cfg, err := webhook.ParseConfig(was.Config)
		if err != nil {
			return reg, err
		}
		if cfg, secret, err = cfg.Rotate(now, expireOld); err != nil {
			return reg, err
		}
		reg.Config, err = cfg.Encode()
		return reg, err
	})
	if err != nil {
		return RotatedView{}, err
	}
	return RotatedView{RegistrationView: Held(nil).View(st), Secret: secret}, nil
}

// webhookSansSecrets decodes reg's config as a webhook config without
// secrets; false when it is not one (another namespace, secrets given, or
// a config the projection's validation will refuse anyway).
func webhookSansSecrets(reg store.Registration) (webhook.Config, bool) {
	var cfg webhook.Config
	if reg.Namespace != webhook.Namespace {
		return cfg, false
	}
	raw := []byte(reg.Config)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil || len(cfg.Secrets) > 0 || len(cfg.Retiring) > 0 {
		return cfg, false
	}
	return cfg, true
}

// MakeSecret returns reg with a new secret (webhook.NewSecret) when it is a
// webhook registration whose config has none, and the secret; else reg
// and "".
func MakeSecret(reg store.Registration) (store.Registration, string) {
	cfg, ok := webhookSansSecrets(reg)
	if !ok {
		return reg, ""
	}
	secret := webhook.NewSecret()
	cfg.Secrets = []string{secret}
	reg.Config, _ = json.Marshal(cfg) // a decoded struct always encodes
	return reg, secret
}

// Subscribe subscribes sub through s and returns it as stored. check (a
// Worker's Check of its template; nil: none) judges what is written. A
// webhook subscription without secrets keeps those of the subscription it
// updates, as Register a registration's, or else gets one that every
// registration of it signs with, returned to be shown once. It is written
// through s.Subscribe over what was read, and read again when that changed
// meanwhile, as Register does, so that another register of the prefix
// (its secret shown) is never undone. Where an existing subscription's
// streams started is history, kept by an update: fromAsked (from was given,
// not defaulted) with another sub.FromHead is refused. Errors are check's
// and s's; journal.ErrInvalid naming "from"; journal.ErrConflict when it
// changed under every read.
func Subscribe(ctx context.Context, s store.Subscriber, check func(store.Registration) error, sub store.Subscription, fromAsked bool) (st store.SubscriptionStatus, secret string, err error) {
	err = retryConflicts("subscription "+store.SubscriptionName(sub.Prefix, sub.ID), func() error {
		list, err := s.Subscriptions(ctx, sub.Prefix)
		if err != nil {
			return err
		}
		var was store.Subscription // none: a create, refused if another made it meanwhile
		for _, l := range list {
			if l.Prefix == sub.Prefix && l.ID == sub.ID {
				was = l.Subscription
			}
		}
		if fromAsked && was.ID != "" && was.FromHead != sub.FromHead {
			return journal.Invalid("from", "is %s, but %s exists, its streams started from %s: from is set when a subscription is made (unregister the prefix and register it again to change it); nothing changed",
				fromName(sub.FromHead), store.SubscriptionName(sub.Prefix, sub.ID), fromName(was.FromHead))
		}
		r, made, _ := keepOrMakeSecret(sub.Template(sub.Prefix), func() (store.Registration, error) {
			if was.ID == "" {
				return store.Registration{}, journal.ErrNotFound
			}
			return was.Template(sub.Prefix), nil
		})
		next := sub
		next.Config = r.Config
		if check != nil {
			if err := check(next.Template(next.Prefix + "x")); err != nil {
				return err
			}
		}
		st, err = s.Subscribe(ctx, next, was)
		secret = made
		return err
	})
	if err != nil {
		return store.SubscriptionStatus{}, "", err
	}
	return st, secret, nil
}

// fromName is a subscription's from as register and the API name it.
func fromName(head bool) string {
	if head {
		return "head"
	}
	return "start"
}

// keepOrMakeSecret is theirs: was reads what reg updates (journal.ErrNotFound:
// nothing).
func keepOrMakeSecret(reg store.Registration, was func() (store.Registration, error)) (store.Registration, string, error) {
	cfg, ok := webhookSansSecrets(reg)
	if !ok {
		return reg, "", nil
	}
	old, err := was()
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return reg, "", err
	}
	if err == nil && old.Namespace == webhook.Namespace {
		if oc, err := webhook.ParseConfig(old.Config); err == nil {
			cfg.Secrets, cfg.Retiring = oc.Secrets, oc.Retiring
			reg.Config, _ = json.Marshal(cfg)
			return reg, "", nil
		}
	}
	reg, secret := MakeSecret(reg)
	return reg, secret, nil
}

package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Subscription is a registration template over a stream prefix: it
// materialises one registration per stream whose name starts with Prefix,
// existing and future, each keyed (stream, ID), with its own cursor and
// order, and Registration.Subscription set to Prefix. A stream is picked up
// when its row is created (its first record, or a registration on it), in
// that transaction, by the store (a trigger on the streams table in the SQL
// stores): nothing scans the streams afterwards, per claim or per append.
// A stream created after the subscription starts at its first record; one
// that existed when it was made starts at its oldest retained record, or
// with FromHead one past its head (a sealed one is then left out). A
// registration (stream, ID) that already exists is left as it is.
type Subscription struct {
	Prefix     string        `json:"stream_prefix"` // ends with "/"; not under journal.ReservedPrefix
	ID         string        `json:"id"`            // the id of every registration it materialises
	Namespace  string        `json:"namespace"`
	URL        string        `json:"url"`
	Config     Config        `json:"-"`
	OnRejected RejectPolicy  `json:"on_rejected,omitempty"`
	Kinds      []string      `json:"kinds,omitempty"`
	Window     int           `json:"window,omitempty"`
	RetainMax  time.Duration `json:"retain_max_ns,omitempty"`
	Retry      RetryPolicy   `json:"retry,omitzero"`
	FromHead   bool          `json:"from_head,omitempty"` // streams existing when it is made start past their head
}

// SubscriptionStatus is a subscription with the count of the streams it
// follows (its registrations).
type SubscriptionStatus struct {
	Subscription
	Streams int `json:"streams"`
}

// Template returns the registration the subscription materialises on
// stream, at cursor 0 (the store's to choose).
func (s Subscription) Template(stream string) Registration {
	return Registration{Stream: stream, ID: s.ID, Namespace: s.Namespace, URL: s.URL, Config: s.Config,
		OnRejected: s.OnRejected, Kinds: s.Kinds, Window: s.Window, RetainMax: s.RetainMax, Retry: s.Retry, Subscription: s.Prefix}
}

// SubscriptionOf returns the subscription over prefix whose template is r
// (its stream and cursor aside): Template's inverse.
func SubscriptionOf(prefix string, r Registration, fromHead bool) Subscription {
	return Subscription{Prefix: prefix, ID: r.ID, Namespace: r.Namespace, URL: r.URL, Config: r.Config, OnRejected: r.OnRejected,
		Kinds: r.Kinds, Window: r.Window, RetainMax: r.RetainMax, Retry: r.Retry, FromHead: fromHead}
}

// Validate checks a subscription: its prefix (a valid stream name ending
// with "/", not herald's own) and its template as Registration.Validate
// does. Errors wrap journal.ErrInvalid and name the field.
func (s Subscription) Validate() error {
	if err := ValidatePrefix(s.Prefix); err != nil {
		return err
	}
	return s.Template(s.Prefix + "x").Validate()
}

// ValidatePrefix checks a subscription's stream prefix: a valid stream name
// that ends with "/" (so that tenant/4/ never takes tenant/42/…) and is not
// under journal.ReservedPrefix. Errors wrap journal.ErrInvalid.
func ValidatePrefix(prefix string) error {
	if err := journal.ValidateStream(prefix); err != nil {
		return journal.Invalid("stream_prefix", "%q is not a valid stream name", prefix)
	}
	switch {
	case len(prefix) >= journal.MaxStreamBytes: // else its template's stream (prefix+"x") is refused, naming stream
		return journal.Invalid("stream_prefix", "is %d bytes: no stream of at most %d bytes is under it", len(prefix), journal.MaxStreamBytes)
	case !strings.HasSuffix(prefix, "/"):
		return journal.Invalid("stream_prefix", "%q must end with \"/\" (tenant/42/), so that it names whole path segments", prefix)
	case Reserved(prefix) || strings.HasPrefix(journal.ReservedPrefix, prefix):
		return journal.Invalid("stream_prefix", "%q would follow herald's own streams (%s…), which a subscription may not", prefix, journal.ReservedPrefix)
	}
	return nil
}

// PrefixEnd returns the first name past every stream under prefix (which
// ends with "/"): streams under prefix are those in [prefix, PrefixEnd),
// byte-wise, an index range.
func PrefixEnd(prefix string) string { return strings.TrimSuffix(prefix, "/") + "0" }

// Subscriber keeps subscriptions. Every store implements it.
type Subscriber interface {
	// Subscribe creates the subscription, materialising it on every
	// existing stream under its prefix, or updates an existing one's
	// destination (namespace, URL, config, policy, kinds, window, bound) and
	// that of every registration it materialised, keeping their cursors;
	// only if what is stored is still what was read, checked in the same
	// atomic step (CheckSubscribe), as Store.Update: was is the
	// subscription as Subscriptions listed it (s a changed copy), or the
	// zero Subscription, none listed: s is created only if none exists.
	// Errors: ErrInvalid (Subscription.Validate, was naming another);
	// ErrConflict (naming it) when it changed, was created or was removed
	// since the read, and nothing changed.
	Subscribe(ctx context.Context, s, was Subscription) (SubscriptionStatus, error)
	// Unsubscribe deletes the subscription and every registration it
	// materialised, with their evidence, and returns how many. Errors:
	// ErrNotFound.
	Unsubscribe(ctx context.Context, prefix, id string) (int, error)
	// Subscriptions lists the subscriptions, by (prefix, id); only those
	// of prefix if set.
	Subscriptions(ctx context.Context, prefix string) ([]SubscriptionStatus, error)
}

// CheckSubscribe is CheckUpdate for Subscriber.Subscribe of sub over was,
// once the store has read stored (nil: none), its config opened, or the
// error of opening it: nil if stored still holds was's settings (its
// template's, Registration.SameSettings), or, was the zero Subscription, if
// there is none; else ErrInvalid (was names another subscription) or an
// error wrapping journal.ErrConflict naming it.
func CheckSubscribe(sub, was Subscription, stored *Subscription, open error) error {
	name := "subscription " + SubscriptionName(sub.Prefix, sub.ID)
	switch {
	case was.Prefix == "" && was.ID == "":
		if stored != nil {
			return changed(name, "was created")
		}
	case was.Prefix != sub.Prefix || was.ID != sub.ID:
		return journal.Invalid("was", "names %s, not the subscription written", SubscriptionName(was.Prefix, was.ID))
	case stored == nil: // unlike Update's ErrNotFound: a subscribe read again creates it
		return changed(name, "was removed")
	case open != nil || !was.Template("").SameSettings(stored.Template("")):
		return changed(name, "changed")
	}
	return nil
}

// MadeBy refuses Register's update of a registration a subscription made:
// its destination and config are the subscription's. It wraps
// journal.ErrInvalid.
func MadeBy(r Registration, prefix string) error {
	return journal.Invalid("stream", "registration %s was made by the subscription of stream prefix %s: register that prefix again to change it", Name(r.Stream, r.ID), journal.Shown(prefix))
}

// SubscriptionName names a subscription in text, as Name a registration.
func SubscriptionName(prefix, id string) string {
	return "stream_prefix=" + journal.Shown(prefix) + " id=" + journal.Shown(id)
}

// SubscriptionNotFound is the error of subscription prefix/id that does
// not exist, as NotFound a registration's.
func SubscriptionNotFound(prefix, id string) error {
	return fmt.Errorf("subscription %s: %w", SubscriptionName(prefix, id), journal.ErrNotFound)
}

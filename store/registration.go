package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/heraldpush/herald/journal"
)

// Registration says who wants a stream's records and where: (stream, id) →
// destination, projection config, cursor and retry state. Its String and
// %v never print Config, which holds secrets.
type Registration struct {
	Stream    string `json:"stream"`    // the journal stream it follows
	ID        string `json:"id"`        // unique within Stream: an inbox URI, a push config id, an endpoint name
	Namespace string `json:"namespace"` // which worker serves it: "activitypub", "cloudevents", "a2a", "webhook", …
	URL       string `json:"url"`       // absolute http(s) URL the messages are POSTed to; no userinfo
	Config    Config `json:"-"`         // the projection's JSON object: keys, tokens, secrets; never logged or encoded
	// OnRejected is what a 4xx other than 408, 410, 425 and 429 means;
	// empty means RejectRetry.
	OnRejected RejectPolicy `json:"on_rejected,omitempty"`
	Kinds      []string     `json:"kinds,omitempty"` // the record kinds it wants (Wants); empty means all
	// Window is how many messages may be unacknowledged at once, 1..MaxWindow
	// (0 means 1: strict order). With more, a receiver may see records out
	// of order within the window (package doc, "Turns").
	Window int `json:"window,omitempty"`
	// RetainMax bounds how long a record is kept for this registration
	// while it has not acknowledged it (Retention, RetainBound): 0 follows
	// the namespace's DefaultRetainMax; otherwise MinRetainMax to
	// MaxRetainMax.
	RetainMax time.Duration `json:"retain_max_ns,omitempty"`
	// Subscription is the prefix of the Subscription that materialised it
	// (whose ID is its ID), empty for one registered alone. Register never
	// changes it.
	Subscription string `json:"subscription,omitempty"`
	// Retry is the registration's own retry policy; its zero parts are the
	// worker's or the namespace's (RetryPolicy).
	Retry RetryPolicy `json:"retry,omitzero"`
	// Rate bounds the requests its receiver gets, shared by every worker
	// (Rate; push's package doc, "Rate"); zero: no limit.
	Rate Rate `json:"rate,omitzero"`

	// NextSeq is the cursor: the first seq not yet acknowledged. Register
	// treats 0 as the oldest record the stream retains.
	NextSeq  uint64 `json:"next_seq"`
	Attempts int    `json:"attempts"` // consecutive failed attempts at NextSeq; reset by an advance, unpark, skip, rewind
	// HostFailures counts consecutive host-level failures at NextSeq: they
	// key its retry backoff (HostRetryAt) but never park it. Reset as
	// Attempts is, and by any answer about the record.
	HostFailures int `json:"host_failures,omitempty"`
	// FailingSince is when the current run of failed attempts at NextSeq
	// began (its first, Attempts 1); meaningless while Attempts is 0.
	// Retry.For counts from it.
	FailingSince time.Time `json:"failing_since,omitzero"`
	// PacedUntil is the earliest instant Rate lets its next burst start,
	// written under a claim (Store.Pace); zero before the first. Register
	// keeps it.
	PacedUntil    time.Time `json:"paced_until,omitzero"`
	NextAttemptAt time.Time `json:"next_attempt_at"` // no sweep retries it before
	Parked        bool      `json:"parked"`          // never due until unparked
	// Paused: an operator stopped it (Store.Pause): never due until resumed;
	// LastError says who and why. A paused registration is Parked too
	// (stopped), its State "paused"; ParkedAt is when it was paused.
	Paused    bool      `json:"paused,omitempty"`
	ParkedAt  time.Time `json:"parked_at,omitzero"`
	LastError string    `json:"last_error,omitempty"` // of the last failure, park or operator action; cleared by an advance
	// LeaseOwner and LeaseUntil are stamped by Store.Due: while the lease is
	// live no other worker gets this registration.
	LeaseOwner string    `json:"lease_owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// ConfigError is set, with Config nil, when a store could not open the
	// stored config (package seal: sealed under a key its keyring lacks, or
	// changed): a worker fails this registration's attempts with it, and no
	// other registration waits for it.
	ConfigError string `json:"config_error,omitempty"`
}

// Key is the identity of a registration.
type Key struct {
	Stream string `json:"stream"`
	ID     string `json:"id"`
}

// Key returns the registration's identity.
func (r Registration) Key() Key { return Key{Stream: r.Stream, ID: r.ID} }

// Host returns HostOf(r.URL): the unit of politeness and of health, and the
// only part of the URL logs show (a path may be a capability).
func (r Registration) Host() string { return HostOf(r.URL) }

// SameDelivery reports whether r, registered again over stored (its config
// opened), leaves what is sent and where as it was: namespace, URL, config
// (as JSON: its keys in another order or other white space are the same
// config), 4xx policy, kinds, window, retry policy and rate (retain-max is
// the pruner's, read by no turn). An update that changes any takes the
// lease from a turn in flight (Store.Register); the same registration again
// disturbs none.
func (r Registration) SameDelivery(stored Registration) bool {
	return r.Namespace == stored.Namespace && r.URL == stored.URL && sameConfig(r.Config, stored.Config) &&
		r.OnRejected == stored.OnRejected && slices.Equal(r.Kinds, stored.Kinds) && max(r.Window, 1) == max(stored.Window, 1) &&
		EncodeRetry(r.Retry) == EncodeRetry(stored.Retry) && r.Rate == stored.Rate
}

// sameConfig reports whether a and b are the same JSON value; numbers
// compare as written (1 and 1.0 differ), so that no doubt is taken for
// sameness. A config that is not JSON is the same only byte for byte.
func sameConfig(a, b Config) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, ea := decodeConfig(a)
	vb, eb := decodeConfig(b)
	return ea == nil && eb == nil && reflect.DeepEqual(va, vb)
}

func decodeConfig(c Config) (any, error) {
	d := json.NewDecoder(bytes.NewReader(c))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// SameSettings reports whether r and stored hold the same settings: all
// that Register writes, SameDelivery's and RetainMax. Cursor, retry state,
// pause and lease are not settings.
func (r Registration) SameSettings(stored Registration) bool {
	return r.SameDelivery(stored) && r.RetainMax == stored.RetainMax
}

// CheckUpdate is Store.Update's check, made in the update's own atomic step
// once the store has read the registration r updates: stored (nil: none),
// its config opened, or the error of opening it (a config that no longer
// opens counts as changed). It returns nil if stored still holds was's
// settings (SameSettings), or, was the zero Registration (read as absent),
// if there is none; else ErrInvalid (was names another registration),
// ErrNotFound, or an error wrapping journal.ErrConflict naming the
// registration.
func CheckUpdate(r, was Registration, stored *Registration, open error) error {
	switch {
	case was.Key() == Key{}:
		if stored != nil {
			return changed("registration "+Name(r.Stream, r.ID), "was created")
		}
	case was.Key() != r.Key():
		return journal.Invalid("was", "names %s, not the registration updated", Name(was.Stream, was.ID))
	case stored == nil:
		return NotFound(r.Stream, r.ID)
	case open != nil || !was.SameSettings(*stored):
		return changed("registration "+Name(r.Stream, r.ID), "changed")
	}
	return nil
}

// changed is the ErrConflict of a compare-and-swap write over what it read
// of what (CheckUpdate, CheckSubscribe), saying how it changed since.
func changed(what, how string) error {
	return fmt.Errorf("%s %s since it was read: read it again: %w", what, how, journal.ErrConflict)
}

// HostOf returns the host of an absolute http(s) URL as herald counts hosts:
// "host:port" of its authority as written (no percent-decoding, so that SQL
// can compute it too), ASCII lower-cased, the port explicit, IPv6 in
// brackets: "https://Example.org/x" gives "example.org:443". A URL that
// ValidateURL refuses gives "(invalid url)".
func HostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "(invalid url)"
	}
	authority := rawURL[strings.Index(rawURL, "://")+3:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	authority = strings.TrimSuffix(FoldHost(authority), ":")
	if !strings.Contains(authority, ":") || strings.HasSuffix(authority, "]") { // no port: none, or an IPv6 address's bracket
		if u.Scheme == "http" {
			authority += ":80"
		} else {
			authority += ":443"
		}
	}
	return authority
}

// FoldHost folds a host's case as HostOf does: ASCII letters lowered, every
// other byte kept, so that SQL can compute it too.
func FoldHost(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// String identifies the registration without its URL's path or its config.
func (r Registration) String() string {
	return fmt.Sprintf("%s (%s → %s, cursor %d)", Name(r.Stream, r.ID), r.Namespace, r.Host(), r.NextSeq)
}

// Name names a registration in text as "stream=S id=ID" (streams and ids
// hold '/', so "S/ID" could split either way), each part journal.Shown.
func Name(stream, id string) string {
	return "stream=" + journal.Shown(stream) + " id=" + journal.Shown(id)
}

// NotFound is the error of registration stream/id that does not exist (a
// journal.ErrNotFound), as every store, and a scoped caller shown nothing
// out of its scope, says it.
func NotFound(stream, id string) error {
	return fmt.Errorf("registration %s: %w", Name(stream, id), journal.ErrNotFound)
}

// Config is a projection's configuration, a JSON object. It may hold
// secrets, so String and GoString redact it.
type Config []byte

// String redacts the config.
func (c Config) String() string {
	if len(c) == 0 {
		return "{}"
	}
	return fmt.Sprintf("[config redacted, %d bytes]", len(c))
}

// GoString redacts the config.
func (c Config) GoString() string { return c.String() }

// RejectPolicy is what a 4xx answer (other than 408, 410, 425 and 429) does.
type RejectPolicy string

const (
	RejectRetry RejectPolicy = "retry" // the default: transient, parking at the ceiling; nothing is lost
	RejectSkip  RejectPolicy = "skip"  // record evidence and move past, as fediverse servers do
)

var namespacePattern = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,63}$`)

// MaxURLBytes bounds a registration's URL.
const MaxURLBytes = 2048

// MaxConfigBytes bounds a registration's config: a turn holds it while it
// runs, beside its page of payloads (run's --page-bytes, 1 MiB by default),
// so that 256 turns hold at most 256 MiB of configs. The largest real one,
// an activitypub shared inbox's actors, is some 20,000 URIs at this size.
const MaxConfigBytes = 1 << 20

// ValidateNamespace checks a namespace: a lowercase letter, then up to 63
// lowercase letters, digits, '.', '_' or '-'. Errors wrap ErrInvalid.
func ValidateNamespace(ns string) error {
	if !namespacePattern.MatchString(ns) {
		return journal.Invalid("namespace", "%q must be a lowercase letter then up to 63 of [a-z0-9._-]", ns)
	}
	return nil
}

// Validate checks what a caller supplies to Register. It returns a
// *journal.InvalidError naming the field, never quoting userinfo or config.
func (r Registration) Validate() error {
	if err := journal.ValidateStream(r.Stream); err != nil {
		return err
	}
	if err := journal.ValidateID("registration id", r.ID); err != nil {
		return err
	}
	if err := ValidateNamespace(r.Namespace); err != nil {
		return err
	}
	if err := ValidateURL(r.URL); err != nil {
		return err
	}
	if len(r.Config) > MaxConfigBytes {
		return journal.Invalid("config", "is %d bytes, more than %d", len(r.Config), MaxConfigBytes)
	}
	if len(r.Config) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Config, &obj); err != nil || obj == nil {
			return journal.Invalid("config", "is not a JSON object")
		}
	}
	switch r.OnRejected {
	case "", RejectRetry, RejectSkip:
	default:
		return journal.Invalid("on_rejected", "%q must be %q or %q", r.OnRejected, RejectRetry, RejectSkip)
	}
	if r.RetainMax != 0 && (r.RetainMax < MinRetainMax || r.RetainMax > MaxRetainMax) {
		return journal.Invalid("retain_max", "is %v: it must be from 1h to 3650 days (0: the namespace's default)", r.RetainMax)
	}
	if r.Window < 0 || r.Window > MaxWindow {
		return journal.Invalid("window", "is %d: it must be 1 to %d", r.Window, MaxWindow)
	}
	if err := r.Retry.Validate(); err != nil {
		return err
	}
	if err := r.Rate.Validate(); err != nil {
		return err
	}
	return ValidateKinds(r.Kinds)
}

// RetainBound returns r.RetainMax, or for 0 its namespace's
// DefaultRetainMax.
func (r Registration) RetainBound() time.Duration {
	if r.RetainMax > 0 {
		return r.RetainMax
	}
	return DefaultRetainMax(r.Namespace)
}

// DefaultRetainMax is a namespace's bound on how long a record waits for a
// registration that has not acknowledged it (Registration.RetainMax):
//
//   - activitypub: 7 days. A fediverse server always has dead instances
//     among its followers' hosts; Mastodon marks a domain unavailable, and
//     stops delivering to it, after failures on 7 distinct days
//     (DeliveryFailureTracker, FAILURE_DAYS_THRESHOLD = 7), so a longer
//     hold only pins an actor's journal for an instance its peers gave up on.
//   - webhook: 90 days. A paying customer's receiver may be down through a
//     long incident; Svix keeps message payloads 90 days
//     (docs.svix.com/retention).
//   - any other namespace (cloudevents, a2a, …): 30 days, between the two.
func DefaultRetainMax(namespace string) time.Duration {
	switch namespace {
	case "activitypub":
		return 7 * 24 * time.Hour
	case "webhook":
		return 90 * 24 * time.Hour
	}
	return 30 * 24 * time.Hour
}

// Registration.RetainMax limits: an hour at least (shorter loses records to
// an ordinary deploy), ten years at most.
const (
	MinRetainMax = time.Hour
	MaxRetainMax = 10 * 365 * 24 * time.Hour
)

// MaxWindow bounds Registration.Window: 64 in flight carry a receiver 500 ms
// away past 100 records a second; more only widens what a receiver sees out
// of order and what a crash repeats.
const MaxWindow = 64

// ValidateURL checks a destination URL: absolute http(s), a host (a
// non-ASCII one as IDNA looks it up), a port from 1 to 65535 without leading zeros if any, no
// userinfo (credentials go in the redacted config), no fragment, no space or
// control character, at most MaxURLBytes. Whether the host may be reached is
// the transport's call. Errors wrap ErrInvalid and never repeat userinfo.
func ValidateURL(raw string) error {
	if raw == "" {
		return journal.Invalid("url", "is empty")
	}
	if len(raw) > MaxURLBytes {
		return journal.Invalid("url", "is longer than %d bytes (%d)", MaxURLBytes, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL, which may hold a token; its
		// cause names only the offending part (a port, an escape).
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return journal.Invalid("url", "cannot be parsed: %v", err)
	}
	if u.User != nil {
		return journal.Invalid("url", "has userinfo (user:password@): put credentials in the projection config instead")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return journal.Invalid("url", "scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return journal.Invalid("url", "has no host")
	}
	// Either would be dialled, and fail, at every attempt: held as a down
	// host, never parked.
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return journal.Invalid("url", "has port %s: it must be 1 to 65535", journal.Shown(p))
		} else if p != strconv.Itoa(n) { // ":080" would be a host of its own (HostOf), beside ":80"
			return journal.Invalid("url", "has port %s: write it %d", journal.Shown(p), n)
		}
	}
	if h := u.Hostname(); strings.IndexFunc(h, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
		if _, err := idna.Lookup.ToASCII(h); err != nil {
			return journal.Invalid("url", "has a host that is no domain name, as IDNA looks names up (%v)", err)
		}
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return journal.Invalid("url", "has a fragment, which is never sent")
	}
	if !utf8.ValidString(raw) {
		return journal.Invalid("url", "is not valid UTF-8")
	}
	for i, r := range raw {
		if unicode.IsSpace(r) || unicode.IsControl(r) { // IsSpace has U+2028 and U+2029
			return journal.Invalid("url", "has a space or control character %U at byte %d", r, i)
		}
	}
	return nil
}

// Status is a registration together with the head of its stream.
type Status struct {
	Registration
	Head   uint64 `json:"head"`   // seq of the stream's newest record, 0 if none
	Sealed bool   `json:"sealed"` // the stream holds a final record
	// Lapsed is Due's only: the lease it took had lapsed, so the turn that
	// held it ended without a save (killed, or fenced out late) and may have
	// sent more than its store says.
	Lapsed bool `json:"-"`
}

// Lag is how many records the registration has not had acknowledged.
func (s Status) Lag() uint64 {
	if s.Head < s.NextSeq {
		return 0
	}
	return s.Head - s.NextSeq + 1
}

// State names where a registration stands: StatePaused, StateParked, StateIdle (cursor
// past the head), StateRetrying (failures at the cursor) or StateReady.
func (s Status) State() string {
	switch {
	case s.Paused:
		return StatePaused
	case s.Parked:
		return StateParked
	case s.NextSeq > s.Head:
		return StateIdle
	case s.Attempts > 0:
		return StateRetrying
	default:
		return StateReady
	}
}

// Registration states, as Status.State reports them.
const (
	StateReady    = "ready"
	StateRetrying = "retrying"
	StateIdle     = "idle"
	StateParked   = "parked"
	StatePaused   = "paused"
)

// MaxKinds bounds Registration.Kinds: a subscription, not a catalogue.
const MaxKinds = 64

// Wants reports whether the registration wants records of kind: always when
// Kinds is empty, else when a pattern matches: an exact kind
// ("invoice.paid"), or a prefix ending in "*" ("order.*" matches
// "order.line.added", not "order"). A record not wanted is passed without a
// message.
func (r Registration) Wants(kind string) bool {
	if len(r.Kinds) == 0 {
		return true
	}
	for _, p := range r.Kinds {
		if prefix, wild := strings.CutSuffix(p, "*"); wild && strings.HasPrefix(kind, prefix) || !wild && p == kind {
			return true
		}
	}
	return false
}

// ValidateKinds checks kind patterns (Registration.Wants): at most MaxKinds,
// distinct, each a valid kind (journal.MaxKindBytes) with "*" only at its
// end. Errors wrap ErrInvalid and name the field "kinds".
func ValidateKinds(kinds []string) error {
	if len(kinds) > MaxKinds {
		return journal.Invalid("kinds", "has %d patterns, more than %d", len(kinds), MaxKinds)
	}
	seen := make(map[string]bool, len(kinds))
	for i, k := range kinds {
		switch {
		case k == "":
			return journal.Invalid("kinds", "pattern %d is empty", i+1)
		case len(k) > journal.MaxKindBytes:
			return journal.Invalid("kinds", "pattern %d is longer than %d bytes (%d)", i+1, journal.MaxKindBytes, len(k))
		case !utf8.ValidString(k):
			return journal.Invalid("kinds", "pattern %d is not valid UTF-8", i+1)
		case strings.Contains(strings.TrimSuffix(k, "*"), "*"):
			return journal.Invalid("kinds", "pattern %q may have one \"*\", at its end (order.*)", k)
		case seen[k]:
			return journal.Invalid("kinds", "pattern %q is given twice", k)
		}
		for j, r := range k {
			if unicode.IsControl(r) || unicode.IsSpace(r) {
				return journal.Invalid("kinds", "pattern %q has whitespace or a control character %U at byte %d", k, r, j)
			}
		}
		seen[k] = true
	}
	return nil
}

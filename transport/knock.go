package transport

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heraldpush/herald/push"
)

// SchemeSigner is a push.Signer that signs in more than one scheme (an
// ActivityPub signer: RFC 9421, then draft-cavage). With two schemes or
// more, Deliver knocks twice (package doc, "Signature schemes").
type SchemeSigner interface {
	push.Signer
	// Schemes lists the schemes signed, in the order tried.
	Schemes() []string
	// SignScheme signs req in scheme, one of Schemes.
	SignScheme(req *http.Request, body []byte, at time.Time, scheme string) error
}

// SchemeMemory keeps, per host (store.HostOf form), the signature scheme the
// host accepted after refusing the first one, where every worker sees it:
// the stores' host rows. Both methods are safe for concurrent use.
type SchemeMemory interface {
	// HostScheme returns the scheme remembered for host and when it was
	// learned; "" and the zero time when none is.
	HostScheme(ctx context.Context, host string) (scheme string, at time.Time, err error)
	// SetHostScheme remembers scheme for host as learned at at.
	SetHostScheme(ctx context.Context, host, scheme string, at time.Time) error
}

const (
	// SchemeRecheck (30 days) is how long a host's remembered scheme holds
	// before the first scheme is tried again: a server that upgrades to
	// RFC 9421 is found within a month, at the price of one refused request
	// a month to a host that did not.
	SchemeRecheck = 30 * 24 * time.Hour
	// schemeRefresh is how long a worker trusts its copy of a host's
	// remembered scheme before reading the store again: a fan-out to one
	// host reads its row once a minute, not once a delivery.
	schemeRefresh = time.Minute
	// maxSchemeCache bounds the copies kept; past it the copy is emptied
	// (the store still has every row).
	maxSchemeCache = 100_000
)

// schemes is a transport's view of the hosts' schemes: a copy of the
// memory's rows, or the only record when there is no memory.
type schemes struct {
	memory SchemeMemory // nil: this process only
	mu     sync.Mutex
	cache  map[string]schemeEntry
}

type schemeEntry struct {
	scheme string
	since  time.Time // when the host's scheme was learned
	read   time.Time // when this copy was read (at of the attempt)
}

// get returns host's remembered scheme and when it was learned.
func (s *schemes) get(ctx context.Context, host string, at time.Time) (string, time.Time) {
	s.mu.Lock()
	e, ok := s.cache[host]
	s.mu.Unlock()
	if ok && (s.memory == nil || (!at.Before(e.read) && at.Before(e.read.Add(schemeRefresh)))) {
		return e.scheme, e.since
	}
	if s.memory == nil {
		return "", time.Time{}
	}
	scheme, since, err := s.memory.HostScheme(ctx, host)
	if err != nil { // the store is away: knock as if nothing were known
		return "", time.Time{}
	}
	s.put(host, schemeEntry{scheme: scheme, since: since, read: at})
	return scheme, since
}

// set remembers that host accepted scheme at at.
func (s *schemes) set(ctx context.Context, host, scheme string, at time.Time) error {
	s.put(host, schemeEntry{scheme: scheme, since: at, read: at})
	if s.memory == nil {
		return nil
	}
	return s.memory.SetHostScheme(ctx, host, scheme, at)
}

func (s *schemes) put(host string, e schemeEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil || len(s.cache) >= maxSchemeCache {
		s.cache = map[string]schemeEntry{}
	}
	s.cache[host] = e
}

// refusedSignature reports whether an answer refuses the request's
// signature: 401, 403, or a 400 whose body says "signature" (what
// Mastodon, Fedify and GoToSocial answer to a signature they cannot check).
func refusedSignature(o push.Outcome) bool {
	switch o.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return true
	case http.StatusBadRequest:
		return bytes.Contains(bytes.ToLower(o.Body), []byte("signature"))
	}
	return false
}

// knock delivers msg signed by g: in the host's remembered scheme if it is
// one of g's and younger than SchemeRecheck; else in each scheme in turn
// while the host refuses the signature, remembering the one it accepts.
// Only the last answer is returned, so a refusal knocked past charges no
// attempt.
func (t *HTTP) knock(ctx context.Context, reg push.Registration, msg push.Message, g SchemeSigner, at time.Time) (push.Outcome, error) {
	order := g.Schemes()
	host := reg.Host()
	known, since := t.schemes.get(ctx, host, at)
	if known != "" && slices.Contains(order, known) && at.Before(since.Add(SchemeRecheck)) {
		return t.attempt(ctx, reg, signedAs(msg, g, known), at)
	}
	var out push.Outcome
	var refused []string
	for i, scheme := range order {
		var err error
		if out, err = t.attempt(ctx, reg, signedAs(msg, g, scheme), at); err != nil {
			return out, err
		}
		if out.OK() && (i > 0 || (known != "" && scheme != known)) {
			if err := t.schemes.set(ctx, host, scheme, at); err != nil {
				t.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "herald: could not remember a host's signature scheme",
					slog.String("host", host), slog.String("scheme", scheme), slog.String("error", err.Error()))
			}
			t.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "herald: host's signature scheme learned",
				slog.String("host", host), slog.String("scheme", scheme), slog.Any("refused", refused))
		}
		if !refusedSignature(out) || i == len(order)-1 {
			break
		}
		refused = append(refused, fmt.Sprintf("%s (%d)", scheme, out.Status))
	}
	if len(refused) > 0 && !out.OK() {
		out.Reason = fmt.Sprintf("%s; signed %s after %v refused", out.Reason, order[len(refused)], refused)
	}
	return out, nil
}

// signsNoSchemeOfTheHost adds to a refusal of a one-scheme signer's
// signature (pinned, or an Ed25519 key) the scheme the host accepted when
// it was last knocked at, if another: a 401 alone does not say what to fix.
func (t *HTTP) signsNoSchemeOfTheHost(ctx context.Context, reg push.Registration, g SchemeSigner, out push.Outcome, at time.Time) push.Outcome {
	known, since := t.schemes.get(ctx, reg.Host(), at)
	if known != "" && !slices.Contains(g.Schemes(), known) {
		out.Reason = fmt.Sprintf("%s; the host accepted only %s signatures when last asked (%s, herald hosts), and this registration signs %s only",
			out.Reason, known, since.UTC().Format(time.RFC3339), strings.Join(g.Schemes(), ", "))
	}
	return out
}

func signedAs(msg push.Message, g SchemeSigner, scheme string) push.Message {
	msg.Signer = push.SignerFunc(func(req *http.Request, body []byte, at time.Time) error {
		return g.SignScheme(req, body, at, scheme)
	})
	return msg
}

package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/internal/projconfig"
	"github.com/heraldpush/herald/push"
)

const (
	// Namespace is the namespace the projection serves.
	Namespace = "a2a"
	// cacheSize bounds the parsed configs kept, about one a task (tokens
	// are per task); a config may hold 8 KiB of secrets.
	cacheSize = 1024
)

// Content types of the two versions (A2A 1.0 §14.1.1, A2A 0.3 §9.5).
const (
	ContentType10 = "application/a2a+json"
	ContentType03 = "application/json"
)

// Header names of the token: a2a-go v2's, and A2A 0.3's (v0.3 SDKs').
const (
	TokenHeader       = "A2a-Notification-Token"
	LegacyTokenHeader = "X-A2a-Notification-Token"
)

var _ push.Projection = (*Projection)(nil)

// Projection turns records into A2A push notifications, a push.Projection
// and push.ConfigValidator safe for concurrent use.
type Projection struct{ *base }

type base = projconfig.Projection[Config]

// New returns the A2A projection.
func New() *Projection {
	return &Projection{projconfig.New(Namespace, cacheSize, func(c Config) (Config, error) { return c, c.Validate() })}
}

// Terminal reports whether acknowledging rec ends the registration.
func (*Projection) Terminal(rec journal.Record) bool {
	if rec.Final {
		return true
	}
	ev, err := parse(rec.Payload)
	if err != nil {
		return false
	}
	state, ok := taskState(ev)
	return ok && state.Terminal()
}

// Messages returns rec's push notification, none for a message in version
// 0.3. Errors wrap journal.ErrInvalid and name the config key or payload
// field at fault.
func (p *Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := projconfig.Get(p.base, reg.Config)
	if err != nil {
		return nil, err
	}
	ev, err := parse(rec.Payload)
	if err != nil {
		return nil, err
	}
	msg := push.Message{ID: rec.ID, ContentType: ContentType10, Body: rec.Payload, Header: http.Header{}}
	if cfg.Version == Version03 {
		task := task03(ev)
		if task == nil {
			return nil, nil
		}
		body, err := json.Marshal(task)
		if err != nil {
			return nil, fmt.Errorf("a2a: encode the v0.3 task of %s#%d: %w", rec.Stream, rec.Seq, err)
		}
		msg.ContentType, msg.Body = ContentType03, body
	}
	if cfg.AuthScheme != "" {
		msg.Header.Set("Authorization", cfg.AuthScheme+" "+cfg.Credentials)
	}
	if cfg.Token != "" {
		msg.Header.Set(TokenHeader, cfg.Token)
		msg.Header.Set(LegacyTokenHeader, cfg.Token)
	}
	return []push.Message{msg}, nil
}

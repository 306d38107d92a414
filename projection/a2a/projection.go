package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// Namespace is the namespace the projection serves.
const Namespace = "a2a"

// Content types of the two versions: application/a2a+json (A2A 1.0
// §14.1.1, as in the §6.6 example) and application/json (A2A 0.3 §9.5).
const (
	ContentType10 = "application/a2a+json"
	ContentType03 = "application/json"
)

// Header names of the notification token. a2a-go v2 sends and reads the
// first, the A2A 0.3 spec and the v0.3 SDKs the second; herald sends both.
const (
	TokenHeader       = "A2a-Notification-Token"
	LegacyTokenHeader = "X-A2a-Notification-Token"
)

var (
	_ push.Projection      = (*Projection)(nil)
	_ push.ConfigValidator = (*Projection)(nil)
)

// Projection turns each record, an A2A 1.0 StreamResponse, into one push
// notification. It holds no state; one value serves any number of
// registrations concurrently.
type Projection struct{}

// New returns the A2A projection.
func New() *Projection { return &Projection{} }

// Namespace returns "a2a".
func (*Projection) Namespace() string { return Namespace }

// ValidateConfig parses reg.Config (see Config). Errors wrap
// journal.ErrInvalid and name the key.
func (*Projection) ValidateConfig(reg push.Registration) error {
	_, err := ParseConfig(reg.Config)
	return err
}

// Terminal reports whether acknowledging rec ends the registration: rec is
// final, or its task state (a task's or a status update's) is terminal:
// TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED or
// TASK_STATE_REJECTED (A2A 1.0 §4.1.3). TASK_STATE_INPUT_REQUIRED and
// TASK_STATE_AUTH_REQUIRED interrupt a task without ending it. A payload that
// is not a StreamResponse counts only by its final flag.
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

// Messages returns the push notification for rec, with rec.ID as its id:
//
//   - version "1.0" (the default): the payload as appended, which parse has
//     checked to be an A2A 1.0 StreamResponse, with Content-Type
//     application/a2a+json (A2A 1.0 §4.3.3);
//   - version "0.3": the v0.3 Task built from the record (see the package
//     doc) with Content-Type application/json, or no message at all for a
//     message record.
//
// Both carry "Authorization: <auth_scheme> <credentials>" when configured
// and the token in A2A-Notification-Token and X-A2A-Notification-Token. The
// same record and registration give byte-identical messages. Errors wrap
// journal.ErrInvalid: a bad config (naming the key) or a payload that is not
// a StreamResponse (naming the field: zero or several members, an unknown
// member, a missing id, an unknown state or role).
func (*Projection) Messages(ctx context.Context, rec journal.Record, reg push.Registration) ([]push.Message, error) {
	cfg, err := ParseConfig(reg.Config)
	if err != nil {
		return nil, err
	}
	ev, err := parse(rec.Payload)
	if err != nil {
		return nil, err
	}
	msg := push.Message{ID: rec.ID, ContentType: ContentType10, Body: rec.Payload, Header: http.Header{}}
	if cfg.v03() {
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

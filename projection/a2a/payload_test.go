package a2a_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/push"
)

func reg(cfg string) push.Registration {
	return push.Registration{Stream: "task/t-1", ID: "push-1", Namespace: a2a.Namespace,
		URL: "https://client.example/hook", Config: push.Config(cfg)}
}

func record(payload string) journal.Record {
	return journal.Record{Stream: "task/t-1", Seq: 1, ID: "t-1#1", Kind: "statusUpdate",
		ContentType: "application/a2a+json", Payload: []byte(payload)}
}

const (
	status  = `{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}`
	msgJSON = `{"messageId":"m-1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}`
)

// TestMessagesRefusesWhatIsNotAStreamResponse: a payload that is not an A2A
// 1.0 StreamResponse gets an error that wraps journal.ErrInvalid and names
// the field, in both versions.
func TestMessagesRefusesWhatIsNotAStreamResponse(t *testing.T) {
	cases := []struct{ payload, field, reason string }{
		{`{}`, "payload", "has 0 of task, message, statusUpdate, artifactUpdate ()"},
		{`{"statusUpdate":null}`, "payload", "has 0 of"},
		{`{"statusUpdate":` + status + `,"message":` + msgJSON + `}`, "payload", "has 2 of task, message, statusUpdate, artifactUpdate (message, statusUpdate)"},
		{`{"statusUpdate":` + status + `,"kind":"status-update"}`, "payload", `has the member "kind"`},
		{`[` + status + `]`, "payload", "is not a JSON object"},
		{`"statusUpdate"`, "payload", "is not a JSON object"},
		{`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"completed"}}}`, "payload.statusUpdate.status.state", `"completed" is not an A2A 1.0 task state (A2A 0.3 spellings`},
		{`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{}}}`, "payload.statusUpdate.status.state", "is missing or TASK_STATE_UNSPECIFIED"},
		{`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_UNSPECIFIED"}}}`, "payload.statusUpdate.status.state", "is missing or TASK_STATE_UNSPECIFIED"},
		{`{"statusUpdate":{"contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`, "payload.statusUpdate.taskId", "is empty"},
		{`{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING"}}}`, "payload.task.contextId", "is empty"},
		{`{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"m","role":"agent","parts":[]}]}}`, "payload.task.history[0].role", `"agent" is not ROLE_USER or ROLE_AGENT`},
		{`{"artifactUpdate":{"taskId":"t-1","contextId":"c-1"}}`, "payload.artifactUpdate.artifact", "is missing"},
		{`{"artifactUpdate":{"taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a","parts":[{"text":"x","raw":"eA=="}]}}}`, "payload.artifactUpdate", "expected exactly one of text, raw, data, or url"},
		{`{"message":{"role":"ROLE_USER","parts":[]}}`, "payload.message.messageId", "is empty"},
		{`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING","timestamp":"yesterday"}}}`, "payload.statusUpdate", "is not an A2A 1.0 statusUpdate"},
	}
	for _, version := range []string{"1.0", "0.3"} {
		for _, c := range cases {
			msgs, err := a2a.New().Messages(context.Background(), record(c.payload), reg(`{"version":"`+version+`"}`))
			var inv *journal.InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, journal.ErrInvalid) {
				t.Errorf("v%s %s: got %d messages and error %v, want an *journal.InvalidError", version, c.payload, len(msgs), err)
				continue
			}
			if inv.Field != c.field || !strings.Contains(inv.Reason, c.reason) {
				t.Errorf("v%s %s: %v, want field %q and a reason with %q", version, c.payload, err, c.field, c.reason)
			}
		}
	}
}

// TestTerminal: a final record, or a terminal task state in a task or a
// status update, ends the registration; interrupted states, messages and
// artifact updates do not.
func TestTerminal(t *testing.T) {
	withState := func(member, state string) string {
		if member == "task" {
			return `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"` + state + `"}}}`
		}
		return `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"` + state + `"}}}`
	}
	want := map[string]bool{
		"TASK_STATE_SUBMITTED": false, "TASK_STATE_WORKING": false,
		"TASK_STATE_INPUT_REQUIRED": false, "TASK_STATE_AUTH_REQUIRED": false,
		"TASK_STATE_COMPLETED": true, "TASK_STATE_FAILED": true, "TASK_STATE_CANCELED": true, "TASK_STATE_REJECTED": true,
	}
	p := a2a.New()
	for _, member := range []string{"task", "statusUpdate"} {
		for state, terminal := range want {
			rec := record(withState(member, state))
			if got := p.Terminal(rec); got != terminal {
				t.Errorf("Terminal(%s %s) = %t, want %t", member, state, got, terminal)
			}
			rec.Final = true
			if !p.Terminal(rec) {
				t.Errorf("Terminal(final %s %s) = false, want true", member, state)
			}
		}
	}
	for _, payload := range []string{
		`{"message":` + msgJSON + `}`,
		`{"artifactUpdate":{"taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a","parts":[{"text":"done"}]},"lastChunk":true}}`,
		`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"completed"}}}`, // not 1.0: not a StreamResponse
		`not json`,
	} {
		rec := record(payload)
		if p.Terminal(rec) {
			t.Errorf("Terminal(%s) = true, want false", payload)
		}
		rec.Final = true
		if !p.Terminal(rec) {
			t.Errorf("Terminal(final %s) = false, want true", payload)
		}
	}
}

// TestV03SkipsMessages: v0.3 push notifications carry Tasks only, so a
// message record yields no message (the cursor moves past it); 1.0 sends it.
func TestV03SkipsMessages(t *testing.T) {
	rec := record(`{"message":` + msgJSON + `}`)
	msgs, err := a2a.New().Messages(context.Background(), rec, reg(`{"version":"0.3"}`))
	if err != nil || len(msgs) != 0 {
		t.Errorf("v0.3 message record: %d messages, error %v; want none and no error", len(msgs), err)
	}
	msgs, err = a2a.New().Messages(context.Background(), rec, reg(`{}`))
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != string(rec.Payload) {
		t.Errorf("v1.0 message record: %d messages, error %v; want the payload", len(msgs), err)
	}
}

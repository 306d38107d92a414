package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
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

// Inputs written for these tests: a status update with a message, a full
// task with every kind of part, and an artifact chunk.
const (
	goldenStatus = `{"statusUpdate": {"taskId": "7d1e0c52-task", "contextId": "ctx-42", "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-03-15T11:00:03.250Z", "message": {"role": "ROLE_AGENT", "messageId": "msg-3", "parts": [{"text": "Quel aéroport ? 🛫"}]}}, "metadata": {"trace": "abc", "attempt": 2}}}`

	goldenTask = `{"task": {"id": "7d1e0c52-task", "contextId": "ctx-42",
  "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-03-15T11:00:09Z"},
  "history": [{"role": "ROLE_USER", "messageId": "msg-1", "parts": [{"text": "Book ZRH→NRT"}, {"data": {"seats": 2, "class": "economy"}}]}],
  "artifacts": [{"artifactId": "art-1", "name": "ticket", "description": "e-ticket", "parts": [
    {"raw": "JVBERi0xLjQK", "filename": "ticket.pdf", "mediaType": "application/pdf"},
    {"url": "https://files.example/t/1.pdf", "filename": "copy.pdf", "mediaType": "application/pdf"},
    {"data": [1, 2, 3], "metadata": {"schema": "seat-list"}},
    {"text": "QX7P2M", "mediaType": "text/plain"}]}],
  "metadata": {"z": true, "a": null, "m": {"y": 1, "b": 2}}}}`

	goldenArtifact = `{"artifactUpdate": {"taskId": "7d1e0c52-task", "contextId": "ctx-42", "artifact": {"artifactId": "art-2", "name": "report.md", "parts": [{"text": "## Outlook\n"}]}, "append": true, "lastChunk": false}}`

	goldenConfig = `"token":"golden-token-not-a-secret","auth_scheme":"Bearer","credentials":"golden-credentials-not-a-secret"`
)

var goldenCases = []struct{ name, payload, config string }{
	{"v1.0-status-update", goldenStatus, `{` + goldenConfig + `}`},
	{"v0.3-status-update", goldenStatus, `{` + goldenConfig + `,"version":"0.3"}`},
	{"v0.3-task", goldenTask, `{` + goldenConfig + `,"version":"0.3"}`},
	{"v0.3-artifact-update", goldenArtifact, `{` + goldenConfig + `,"version":"0.3"}`},
}

// TestGolden pins the exact headers and body of a 1.0 notification and of
// the v0.3 Tasks built from a status update, a task and an artifact update.
// Run with -update to rewrite the files after an intended change.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			msg := projtest.One(t, a2a.New(), record(c.payload), reg(c.config))
			projtest.Golden(t, "a2a/"+c.name+".http", projtest.Render(t, reg(c.config).URL, msg, time.Time{}))
		})
	}
}

// TestMessagesArePure: the same record and registration give byte-identical
// messages call after call (maps in metadata and data included); the
// message id is the record id.
func TestMessagesArePure(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) { projtest.Pure(t, a2a.New(), reg(c.config), record(c.payload)) })
	}
}

// FuzzMessages: a record's payload is what the application appended,
// which may carry a remote party's data. Messages and Terminal never
// panic; a payload that is not an A2A StreamResponse is refused with
// journal.ErrInvalid; what is accepted goes out as valid JSON with the
// token in both token headers.
func FuzzMessages(f *testing.F) {
	for _, seed := range []string{
		`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
		`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
		`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"hi"}]}}}`,
		`{"message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
		`{"task":null,"message":null}`, `{"task":{},"message":{}}`, `{"status":{}}`, `{"task":{"id":""}}`,
		`{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_EXPLODED"}}}`, `[]`, `null`, `"x"`, ``,
	} {
		f.Add([]byte(seed), false, false)
		f.Add([]byte(seed), true, true)
	}
	p := a2a.New()
	f.Fuzz(func(t *testing.T, payload []byte, v03, final bool) {
		cfg := a2a.Config{Token: "tok-0123456789abcdef"}
		if v03 {
			cfg.Version = a2a.Version03
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reg := push.Registration{Stream: "task/1", ID: "push-1", Namespace: a2a.Namespace, URL: "https://client.example/push", Config: raw}
		rec := journal.Record{Stream: "task/1", Seq: 1, ID: "r1", Kind: "k", ContentType: journal.DefaultContentType, Payload: payload, Final: final}
		_ = p.Terminal(rec)
		msgs, _ := projtest.Messages(t, p, rec, reg)
		for _, m := range msgs {
			if !json.Valid(m.Body) || m.ID != rec.ID {
				t.Fatalf("Messages(%q) = id %q body %q", payload, m.ID, m.Body)
			}
			if m.Header.Get(a2a.TokenHeader) != cfg.Token || m.Header.Get(a2a.LegacyTokenHeader) != cfg.Token {
				t.Fatalf("Messages(%q): token headers %v", payload, m.Header)
			}
		}
	})
}

// BenchmarkMessages measures one status update (the golden one, about 300
// bytes) as a 1.0 notification (decoded and checked, sent as appended) and
// as a v0.3 Task (decoded, converted, encoded), the config cached.
func BenchmarkMessages(b *testing.B) {
	for _, c := range []struct{ name, config string }{
		{"v1.0", `{` + goldenConfig + `}`},
		{"v0.3", `{` + goldenConfig + `,"version":"0.3"}`},
	} {
		projtest.BenchMessages(b, c.name, a2a.New(), record(goldenStatus), reg(c.config))
	}
}

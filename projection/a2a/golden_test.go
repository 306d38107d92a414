package a2a_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
)

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
			msgs, err := a2a.New().Messages(context.Background(), record(c.payload), reg(c.config))
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			projtest.Golden(t, "a2a/"+c.name+".http", projtest.Render(t, reg(c.config).URL, msgs[0], time.Time{}))
		})
	}
}

// TestMessagesArePure: the same record and registration give byte-identical
// messages call after call (maps in metadata and data included); the
// message id is the record id.
func TestMessagesArePure(t *testing.T) {
	p := a2a.New()
	for _, c := range goldenCases {
		first, err := p.Messages(context.Background(), record(c.payload), reg(c.config))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			again, err := p.Messages(context.Background(), record(c.payload), reg(c.config))
			if err != nil {
				t.Fatal(err)
			}
			got, want := projtest.Render(t, reg(c.config).URL, again[0], time.Time{}), projtest.Render(t, reg(c.config).URL, first[0], time.Time{})
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: call %d differs:\n%s\n---\n%s", c.name, i, got, want)
			}
		}
		if first[0].ID != record(c.payload).ID {
			t.Errorf("%s: message id %q, want the record id", c.name, first[0].ID)
		}
	}
}

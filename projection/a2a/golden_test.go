package a2a_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/push"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/a2a")

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

// render writes a message as its id, its headers (Content-Type first, then
// sorted by name) and its body.
func render(msg push.Message) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "message-id: %s\nContent-Type: %s\n", msg.ID, msg.ContentType)
	names := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(msg.Body)
	return b.Bytes()
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
			got := render(msgs[0])
			path := filepath.Join("..", "..", "testdata", "golden", "a2a", c.name+".http")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run go test -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("message differs from %s (run go test -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
			}
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
			if !bytes.Equal(render(again[0]), render(first[0])) {
				t.Fatalf("%s: call %d differs:\n%s\n---\n%s", c.name, i, render(again[0]), render(first[0]))
			}
		}
		if first[0].ID != record(c.payload).ID {
			t.Errorf("%s: message id %q, want the record id", c.name, first[0].ID)
		}
	}
}

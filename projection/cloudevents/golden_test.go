package cloudevents_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/push"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/cloudevents")

// goldenRecord is written for these tests: a small push event with
// non-ASCII text and a time with nanoseconds.
var goldenRecord = journal.Record{
	Stream:      "repo/octo-org/hello-world",
	Seq:         7,
	ID:          "delivery-7f3c2a10-5e1b",
	Kind:        "com.github.push",
	ContentType: "application/json",
	Payload:     []byte(`{"ref":"refs/heads/main","commits":[{"id":"a1b2c3d","message":"Fix the café menu ☕"}],"forced":false}`),
	AppendedAt:  time.Date(2026, 3, 15, 11, 0, 7, 123456789, time.UTC),
}

func registration(cfg string) push.Registration {
	return push.Registration{Stream: goldenRecord.Stream, ID: "sink", Namespace: cloudevents.Namespace,
		URL: "https://events.example/in", Config: push.Config(cfg)}
}

// render writes a message as its id, its headers (Content-Type first, then
// sorted by name) and its body: the exact bytes a receiver gets, less what
// the transport adds (Host, Content-Length, User-Agent).
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

// TestGolden pins the exact headers and body of one record in both content
// modes. Run with -update to rewrite the files after an intended change.
func TestGolden(t *testing.T) {
	cases := []struct{ name, config string }{
		{"binary", `{"source":"https://github.com/octo-org/hello-world","token":"golden-token-not-a-secret"}`},
		{"structured", `{"source":"https://github.com/octo-org/hello-world","structured":true,"token":"golden-token-not-a-secret"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs, err := cloudevents.New().Messages(context.Background(), goldenRecord, registration(c.config))
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			got := render(msgs[0])
			path := filepath.Join("..", "..", "testdata", "golden", "cloudevents", c.name+".http")
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
// messages, call after call, whatever the location of the record's time;
// the message id is the record id.
func TestMessagesArePure(t *testing.T) {
	p := cloudevents.New()
	for _, cfg := range []string{
		`{"source":"/orders","token":"t0k3n"}`,
		`{"source":"/orders","structured":true}`,
	} {
		first, err := p.Messages(context.Background(), goldenRecord, registration(cfg))
		if err != nil {
			t.Fatal(err)
		}
		elsewhere := goldenRecord
		elsewhere.AppendedAt = goldenRecord.AppendedAt.In(time.FixedZone("UTC+9", 9*3600))
		for i := range 50 {
			rec := goldenRecord
			if i%2 == 1 {
				rec = elsewhere
			}
			again, err := p.Messages(context.Background(), rec, registration(cfg))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(render(again[0]), render(first[0])) {
				t.Fatalf("call %d differs:\n%s\n---\n%s", i, render(again[0]), render(first[0]))
			}
		}
		if first[0].ID != goldenRecord.ID {
			t.Errorf("message id %q, want the record id %q", first[0].ID, goldenRecord.ID)
		}
	}
}

package cloudevents_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

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
			projtest.Golden(t, "cloudevents/"+c.name+".http", projtest.Render(t, registration(c.config).URL, msgs[0], time.Time{}))
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
			got, want := projtest.Render(t, registration(cfg).URL, again[0], time.Time{}), projtest.Render(t, registration(cfg).URL, first[0], time.Time{})
			if !bytes.Equal(got, want) {
				t.Fatalf("call %d differs:\n%s\n---\n%s", i, got, want)
			}
		}
		if first[0].ID != goldenRecord.ID {
			t.Errorf("message id %q, want the record id %q", first[0].ID, goldenRecord.ID)
		}
	}
}

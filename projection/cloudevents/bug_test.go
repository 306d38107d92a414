//go:build knownbugs

package cloudevents_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/push"
)

// TestBugTextJSONPayloadThatIsNotJSON is a failing test for a bug found by
// FuzzMessages (it runs with -tags knownbugs until it is fixed; see
// RELIABILITY.md). The journal checks JSON payloads only for
// application/json and +json types, so a record of type text/json may hold
// any text; needsBase64 tells sdk-go to embed a text/json payload as a JSON
// value in structured mode, and sdk-go's encoder fails on it. Messages then
// returns an error that does not wrap journal.ErrInvalid (its documented
// contract for a record that makes no CloudEvent), and the registration
// retries the record to the ceiling and parks. Either carry such a payload
// as data_base64 (needsBase64: JSON types only when json.Valid) or refuse
// it with ErrInvalid.
func TestBugTextJSONPayloadThatIsNotJSON(t *testing.T) {
	cfg, err := json.Marshal(cloudevents.Config{Source: "https://shop.example/orders", Structured: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := push.Registration{Stream: "orders/1", ID: "sink", Namespace: cloudevents.Namespace, URL: "https://sink.example/", Config: cfg}
	if _, err := journal.ValidateEntries("orders/1", []journal.Entry{{ID: "evt-1", Kind: "k", ContentType: "text/json", Payload: []byte("not json")}}, 0); err != nil {
		t.Fatalf("the journal refuses the record, so no projection sees it: %v", err)
	}
	rec := journal.Record{Stream: "orders/1", Seq: 1, ID: "evt-1", Kind: "k", ContentType: "text/json", Payload: []byte("not json")}
	msgs, err := cloudevents.New().Messages(context.Background(), rec, reg)
	if err != nil && !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("Messages: %v: neither a message nor journal.ErrInvalid", err)
	}
	t.Logf("messages %d, error %v", len(msgs), err)
}

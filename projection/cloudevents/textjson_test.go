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

// TestTextJSONPayloadThatIsNotJSON (found by FuzzMessages): the journal
// checks JSON payloads only for application/json and +json types, so a
// text/json record may hold any text. sdk-go embeds text/json as a JSON
// value in structured mode and its encoder failed on such a payload, so the
// record retried to the ceiling and parked. It now travels as data_base64.
func TestTextJSONPayloadThatIsNotJSON(t *testing.T) {
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

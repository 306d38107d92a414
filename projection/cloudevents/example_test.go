package cloudevents_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/push"
)

func ExampleProjection_Messages() {
	rec := journal.Record{Stream: "orders/42", Seq: 3, ID: "order-42-paid", Kind: "com.shop.order.paid",
		ContentType: "application/json", Payload: []byte(`{"total":"12.50"}`),
		AppendedAt: time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)}
	reg := push.Registration{Stream: "orders/42", ID: "billing", URL: "https://billing.example/events",
		Config: push.Config(`{"source":"https://shop.example/orders"}`)}
	msgs, err := cloudevents.New().Messages(context.Background(), rec, reg)
	if err != nil {
		panic(err)
	}
	m := msgs[0]
	fmt.Println(m.ID, m.ContentType)
	for _, h := range []string{"Ce-Id", "Ce-Source", "Ce-Type", "Ce-Subject", "Ce-Time", "Ce-Specversion"} {
		fmt.Printf("%s: %s\n", h, m.Header.Get(h))
	}
	fmt.Printf("%s\n", m.Body)
	// Output:
	// order-42-paid application/json
	// Ce-Id: order-42-paid
	// Ce-Source: https://shop.example/orders
	// Ce-Type: com.shop.order.paid
	// Ce-Subject: orders/42
	// Ce-Time: 2026-03-15T11:00:00Z
	// Ce-Specversion: 1.0
	// {"total":"12.50"}
}

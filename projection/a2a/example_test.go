package a2a_test

import (
	"context"
	"fmt"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/push"
)

func ExampleProjection_Messages() {
	rec := journal.Record{Stream: "task/8f3c", Seq: 5, ID: "8f3c#5", Kind: "statusUpdate", ContentType: "application/a2a+json",
		Payload: []byte(`{"statusUpdate":{"taskId":"8f3c","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)}
	p := a2a.New()
	for _, version := range []string{"1.0", "0.3"} {
		reg := push.Registration{Stream: "task/8f3c", ID: "push-1", URL: "https://client.example/hook",
			Config: push.Config(`{"token":"t-1","version":"` + version + `"}`)}
		msgs, err := p.Messages(context.Background(), rec, reg)
		if err != nil {
			panic(err)
		}
		fmt.Println(msgs[0].ContentType, msgs[0].Header.Get("X-A2A-Notification-Token"))
		fmt.Printf("%s\n", msgs[0].Body)
	}
	fmt.Println("terminal:", p.Terminal(rec))
	// Output:
	// application/a2a+json t-1
	// {"statusUpdate":{"taskId":"8f3c","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}
	// application/json t-1
	// {"kind":"task","id":"8f3c","contextId":"c1","status":{"state":"completed"}}
	// terminal: true
}

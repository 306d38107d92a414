package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/heraldpush/herald/daemon"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// A daemon in one's own process: a webhook worker over the memory store
// with the HTTP API on loopback. A record appended through the API wakes
// the worker, which POSTs it to the receiver; cancelling the context stops
// the daemon once every cursor is saved.
func Example() {
	received := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- r.Header.Get("Content-Type") + " " + string(body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	s := memory.New()
	// A loopback receiver over http: the transport refuses both unless told.
	tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true})
	if err != nil {
		log.Fatal(err)
	}
	ready := make(chan daemon.Addrs, 1)
	d, err := daemon.New(daemon.Options{
		Store:       s,
		Transport:   tr,
		Projections: []push.Projection{webhook.New()},
		APIAddr:     "127.0.0.1:0", // loopback: no token needed
		Logger:      slog.New(slog.DiscardHandler),
		Ready:       func(a daemon.Addrs) { ready <- a },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	api := "http://" + (<-ready).API

	post := func(path, body string) {
		resp, err := http.Post(api+path, "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println("POST", path, resp.Status)
	}
	post("/v1/registrations", `{"stream": "orders/1", "id": "billing", "namespace": "webhook",
		"url": "`+receiver.URL+`/hooks", "config": {"secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}}`)
	post("/v1/records", `{"stream": "orders/1", "records": [{"id": "evt-1", "kind": "order.created", "payload": {"total": 42}}]}`)

	fmt.Println("received:", <-received)
	stop()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// POST /v1/registrations 201 Created
	// POST /v1/records 201 Created
	// received: application/json {"total": 42}
	// stopped: <nil>
}

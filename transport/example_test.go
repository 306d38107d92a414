package transport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

func ExampleNew() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer receiver.Close()

	// The defaults refuse plain http and loopback: a demo on one machine
	// opts in explicitly.
	t, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Timeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	reg := push.Registration{Stream: "tenant/42", ID: "billing", Namespace: "webhook", URL: receiver.URL + "/hook"}
	msg := push.Message{ID: "evt-1", ContentType: "application/json", Body: []byte(`{"paid":true}`)}
	out, err := t.Deliver(context.Background(), reg, msg, time.Now())
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Verdict, out.Status, out.RetryAfter, out.Reason)

	strict, _ := transport.New(transport.Options{})
	out, _ = strict.Deliver(context.Background(), reg, msg, time.Now())
	fmt.Println(out.Verdict, out.Reason)
	// Output:
	// transient 503 30s 503 Service Unavailable; Retry-After 30s
	// permanent netguard: scheme http is not allowed: https only; herald run/sweep --allow-http (Options.AllowHTTP) opts in
}

func ExampleCheckAddress() {
	for _, a := range []string{"93.184.215.14", "169.254.169.254", "::ffff:10.0.0.7"} {
		fmt.Println(transport.CheckAddress(netip.MustParseAddr(a), false))
	}
	// Output:
	// <nil>
	// netguard: 169.254.169.254 is in 169.254.0.0/16 (link-local, incl. cloud metadata 169.254.169.254 (RFC 3927)); no option lifts it: herald never connects there
	// netguard: ::ffff:10.0.0.7 (IPv4-mapped 10.0.0.7) is in 10.0.0.0/8 (RFC 1918 private); herald run/sweep --allow-private-network (Options.AllowPrivateNetwork) opts in
}

func ExampleHostPattern() {
	p, err := transport.ParseHostPattern("*.hooks.example")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Match("eu.hooks.example"), p.Match("hooks.example"), p.Match("hooks.example.evil.net"))
	_, err = transport.ParseHostPattern("https://hooks.example/in")
	fmt.Println(err)
	// Output:
	// true false false
	// invalid host pattern: "https://hooks.example/in" is a URL; give the host name only (hooks.example.com)
}

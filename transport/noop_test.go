package transport_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

func TestNoopTransportAcceptsAndLogsNoContent(t *testing.T) {
	var logs bytes.Buffer
	nt := transport.NoopTransport{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	msg := push.Message{ID: "msg-7", ContentType: "application/json", Body: []byte(`{"body":"b0dy-content"}`),
		Header: http.Header{"Authorization": {"Bearer h3ader-value"}}}
	out, err := nt.Deliver(context.Background(), registration("https://hooks.example/p4th?q=qu3ry"), msg, at)
	if err != nil || out.Verdict != push.Accepted || out.Status != 0 || out.Reason != "" || out.Body != nil {
		t.Fatalf("got %s, %v; want accepted with status 0", describe(out), err)
	}
	line := logs.String()
	for _, want := range []string{"level=DEBUG", "dry run", "host=hooks.example", "message=msg-7", "bytes=23"} {
		mustContain(t, "log", line, want)
	}
	for _, never := range []string{"b0dy-content", "h3ader-value", "p4th", "qu3ry"} {
		if strings.Contains(line, never) {
			t.Errorf("log contains %q: %s", never, line)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := nt.Deliver(ctx, registration("https://hooks.example/"), msg, at); !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver with an ended context = %v, want context.Canceled", err)
	}
	var zero transport.NoopTransport // logs to slog.Default
	if out, err := zero.Deliver(context.Background(), registration("https://hooks.example/"), msg, at); err != nil || !out.OK() {
		t.Fatalf("zero NoopTransport: %s, %v", describe(out), err)
	}
}

package transport

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldpush/herald/push"
)

// NoopTransport sends nothing and accepts every message, for dry runs: a
// worker with it moves cursors as if every receiver answered 2xx. The
// Outcome is Accepted with Status 0 and no body. Each message is logged at
// debug level with its registration, host, message id, content type and
// size; never its body, headers or the URL's path or query. The zero value
// is ready to use. Deliver returns an error only when ctx has ended.
type NoopTransport struct {
	Logger *slog.Logger // nil means slog.Default()
}

var _ push.Transport = NoopTransport{}

// Deliver logs msg and returns an Accepted Outcome.
func (n NoopTransport) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return push.Outcome{}, fmt.Errorf("transport: not delivered (dry run) to %s: %w", reg.Host(), err)
	}
	cmp.Or(n.Logger, slog.Default()).LogAttrs(ctx, slog.LevelDebug, "herald: dry run, message not sent",
		slog.String("stream", reg.Stream), slog.String("registration", reg.ID), slog.String("namespace", reg.Namespace),
		slog.String("host", reg.Host()), slog.String("message", msg.ID), slog.String("content_type", msg.ContentType),
		slog.Int("bytes", len(msg.Body)), slog.Bool("signed", msg.Signer != nil), slog.Time("at", at))
	return push.Outcome{Verdict: push.Accepted}, nil
}

// String names the transport.
func (n NoopTransport) String() string { return "transport.NoopTransport (dry run)" }

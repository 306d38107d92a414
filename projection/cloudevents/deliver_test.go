package cloudevents_test

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/heraldpush/herald/push"
)

// post sends msg as the transport would (the transport package is built
// elsewhere): a POST with the message's body, Content-Type and headers,
// signed at `at` when the message has a signer. The caller closes the body.
func post(ctx context.Context, client *http.Client, url string, msg push.Message, at time.Time) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg.Body))
	if err != nil {
		return nil, err
	}
	for k, vs := range msg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", msg.ContentType)
	if msg.Signer != nil {
		if err := msg.Signer.Sign(req, msg.Body, at); err != nil {
			return nil, err
		}
	}
	return client.Do(req)
}

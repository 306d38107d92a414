package a2a_test

import (
	"bytes"
	"context"
	"io"
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

// httpTransport is the smallest push.Transport: 2xx is accepted, anything
// else transient.
type httpTransport struct{ client *http.Client }

func (t httpTransport) Deliver(ctx context.Context, reg push.Registration, msg push.Message, at time.Time) (push.Outcome, error) {
	resp, err := post(ctx, t.client, reg.URL, msg, at)
	if err != nil {
		if ctx.Err() != nil {
			return push.Outcome{}, ctx.Err()
		}
		return push.Outcome{Verdict: push.Transient, Reason: err.Error()}, nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 == 2 {
		return push.Outcome{Verdict: push.Accepted, Status: resp.StatusCode}, nil
	}
	return push.Outcome{Verdict: push.Transient, Status: resp.StatusCode, Reason: resp.Status}, nil
}

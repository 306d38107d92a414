// Package wire is what the benchmark's three senders share so that they put
// the same bytes on the wire: the event payload, the receivers' Standard
// Webhooks secrets, the signed POST, the keep-alive HTTP client, and River's
// job (one delivery of one event to one receiver) with its worker.
package wire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Payload returns event n's payload: a JSON object of PayloadBytes bytes.
func Payload(n int) []byte {
	head := fmt.Sprintf(`{"type":"order.updated","order":%d,"total_cents":%d,"note":"`, n, 1000+n%977)
	pad := PayloadBytes - len(head) - 2
	return []byte(head + string(bytes.Repeat([]byte("x"), max(pad, 0))) + `"}`)
}

// PayloadBytes is the size of every event's payload.
const PayloadBytes = 256

// Secret returns receiver route's Standard Webhooks signing secret
// (whsec_ + base64 of 32 bytes derived from the route number).
func Secret(route int) string {
	sum := sha256.Sum256([]byte("herald-bench-secret-" + strconv.Itoa(route)))
	return "whsec_" + base64.StdEncoding.EncodeToString(sum[:])
}

// Signers caches the parsed secrets of routes.
type Signers struct{ m sync.Map }

// For returns route's signer.
func (s *Signers) For(route int) (*standardwebhooks.Webhook, error) {
	if v, ok := s.m.Load(route); ok {
		return v.(*standardwebhooks.Webhook), nil
	}
	wh, err := standardwebhooks.NewWebhook(Secret(route))
	if err != nil {
		return nil, err
	}
	s.m.Store(route, wh)
	return wh, nil
}

// NewClient returns an HTTP client with keep-alive connections, conns of
// them kept per host (the senders' concurrency), and herald's default
// 15 s request timeout.
func NewClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        max(conns, 256),
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Post sends payload to url as herald's webhook projection does (Standard
// Webhooks headers, signed at the current second) and fails unless the
// answer is 2xx. The answer's body is read (up to 64 KiB) and closed so that
// the connection is reused.
func Post(ctx context.Context, c *http.Client, url, id string, payload []byte, wh *standardwebhooks.Webhook) error {
	now := time.Now()
	sig, err := wh.Sign(id, now, payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", id)
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("Webhook-Signature", sig)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

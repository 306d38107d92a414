package demo

import (
	"fmt"
	"net/http"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// webhookReceiver is a Standard Webhooks consumer: it verifies every
// request with the reference library (signature over id.timestamp.body
// with its secret, and a timestamp within 5 minutes of its clock), then
// checks it against the journal by its webhook-id, the body byte for byte.
type webhookReceiver struct {
	wh     *standardwebhooks.Webhook
	ledger *ledger
}

func newWebhookReceiver(secret string, l *ledger) (*webhookReceiver, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: the secret is not a whsec_ secret")
	}
	return &webhookReceiver{wh: wh, ledger: l}, nil
}

func (r *webhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(req)
	if err == nil {
		if verr := r.wh.Verify(body, req.Header); verr != nil {
			err = fmt.Errorf("standard webhooks: %w", verr)
		}
	}
	if err != nil {
		refuse(w, r.ledger.fail(req.URL.Path, err))
		return
	}
	if _, err := r.ledger.check(req.URL.Path, req.Header.Get("webhook-id"), body, nil); err != nil {
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

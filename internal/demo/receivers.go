package demo

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
)

// Receiver names; each is also the id of the registrations that deliver to
// it.
const (
	InboxName       = "inbox"
	CloudEventsName = "cloudevents"
	A2AName         = "a2a"
	WebhookName     = "webhook"
	FlakyName       = "flaky"
	GoneName        = "gone"
	DownName        = "down"
)

// FlakyTimes is how many messages the flaky receiver answers 503 to before
// it takes them: fewer than MaxAttempts, so that it recovers without being
// parked.
const FlakyTimes = 3

// receivers are the demo's local servers.
type receivers struct {
	inbox, cloudevents, a2a, webhook, flaky, gone, down *Receiver
	downCtl                                             *down
}

// startReceivers starts every receiver on loopback. keys maps each actor's
// keyId to its public key, as the inbox would fetch it; source is the
// CloudEvents source each webhook stream is registered with.
func startReceivers(ctx context.Context, c *credentials, keys map[string]crypto.PublicKey, source func(string) string) (_ *receivers, err error) {
	rs := &receivers{}
	defer func() {
		if err != nil {
			rs.close()
		}
	}()
	l := newLedger()
	if rs.inbox, err = startReceiver(InboxName, activitypub.Namespace,
		"HTTP signature (go-fed/httpsig) with the actor's key, Digest, Date, keyId owner, no bto/bcc",
		true, l, &inbox{keys: keys, now: time.Now, ledger: l}); err != nil {
		return nil, err
	}
	l = newLedger()
	ce, err := newCEReceiver(ctx, c.ceToken, source, l)
	if err != nil {
		return nil, err
	}
	if rs.cloudevents, err = startReceiver(CloudEventsName, cloudevents.Namespace,
		"sdk-go's HTTP receiver decodes; bearer token; id, source, type, subject, time, data", true, l, ce); err != nil {
		return nil, err
	}
	l = newLedger()
	if rs.a2a, err = startReceiver(A2AName, a2a.Namespace,
		"Authorization and both token headers; a2a-go v2 decodes the StreamResponse; its task",
		true, l, &a2aReceiver{token: c.a2aToken, authorization: "Bearer " + c.a2aBearer, ledger: l}); err != nil {
		return nil, err
	}
	webhookVerifier := func(l *ledger) (*webhookReceiver, error) { return newWebhookReceiver(c.whsec, l) }
	l = newLedger()
	wh, err := webhookVerifier(l)
	if err != nil {
		return nil, err
	}
	if rs.webhook, err = startReceiver(WebhookName, webhook.Namespace,
		"Standard Webhooks signature and timestamp (standard-webhooks library)", true, l, wh); err != nil {
		return nil, err
	}
	l = newLedger()
	if wh, err = webhookVerifier(l); err != nil {
		return nil, err
	}
	if rs.flaky, err = startReceiver(FlakyName, webhook.Namespace,
		fmt.Sprintf("503 with Retry-After 1-2 s to its first %d messages, then verifies as webhook does", FlakyTimes),
		true, l, &flaky{next: wh, times: FlakyTimes, ledger: l, refused: map[string]bool{}}); err != nil {
		return nil, err
	}
	l = newLedger()
	if rs.gone, err = startReceiver(GoneName, webhook.Namespace, "410 Gone, always", false, l, &gone{ledger: l}); err != nil {
		return nil, err
	}
	l = newLedger()
	if wh, err = webhookVerifier(l); err != nil {
		return nil, err
	}
	rs.downCtl = &down{next: wh, ledger: l}
	if rs.down, err = startReceiver(DownName, webhook.Namespace,
		"500 until the demo brings it back, then verifies as webhook does", true, l, rs.downCtl); err != nil {
		return nil, err
	}
	return rs, nil
}

// all lists the receivers in the order the demo shows them.
func (rs *receivers) all() []*Receiver {
	return []*Receiver{rs.inbox, rs.cloudevents, rs.a2a, rs.webhook, rs.flaky, rs.gone, rs.down}
}

// close stops every receiver that was started.
func (rs *receivers) close() error {
	var errs []error
	for _, r := range rs.all() {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(errs...)
}

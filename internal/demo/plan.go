package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// plan is one registration of the demo: a stream, the receiver it
// delivers to, and what the journal says that receiver should get.
type plan struct {
	reg      push.Registration
	receiver *Receiver
	path     string     // the receiver's path for this registration: "/" + stream
	records  int        // records in the stream
	want     []expected // the projection of the stream's records, up to a terminal one
}

// key names the plan's registration.
func (p *plan) key() push.Key { return p.reg.Key() }

// plans lays out the registrations: each actor stream to the inbox; each
// webhook stream to the CloudEvents receiver, the Standard Webhooks
// receiver, and the flaky, gone and down ones; each task stream to the A2A
// webhook. Configs carry the run's credentials.
func plans(in *Input, rs *receivers, c *credentials) ([]*plan, error) {
	var out []*plan
	add := func(s Stream, r *Receiver, cfg any) error {
		raw, err := json.Marshal(cfg)
		if err != nil {
			return fmt.Errorf("encode the %s config of %s: %w", r.Namespace, s.Name, err)
		}
		path := "/" + s.Name
		out = append(out, &plan{
			reg: push.Registration{Stream: s.Name, ID: r.Name, Namespace: r.Namespace,
				URL: r.URL() + (&url.URL{Path: path}).EscapedPath(), Config: raw},
			receiver: r, path: path, records: len(s.Entries),
		})
		return nil
	}
	for _, s := range in.Actors {
		cfg := activitypub.Config{KeyID: s.Actor + "#main-key", PrivateKey: c.keyPEM,
			Actors: []string{InboxActor}, Followers: []string{s.Actor + "/followers"}}
		if err := add(s, rs.inbox, cfg); err != nil {
			return nil, err
		}
	}
	for _, s := range in.Webhooks {
		if err := add(s, rs.cloudevents, cloudevents.Config{Source: sourceOf(s.Name), Token: c.ceToken}); err != nil {
			return nil, err
		}
		for _, r := range []*Receiver{rs.webhook, rs.flaky, rs.gone, rs.down} {
			if err := add(s, r, webhook.Config{Secrets: []string{c.whsec}}); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range in.Tasks {
		if err := add(s, rs.a2a, a2a.Config{Token: c.a2aToken, AuthScheme: "Bearer", Credentials: c.a2aBearer}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expect computes what p's receiver should get: the messages p's
// projection makes of the stream's records as the journal holds them, in
// order, up to and including a record that ends the registration.
func (p *plan) expect(ctx context.Context, j journal.Journal, proj push.Projection) error {
	p.want = nil
	for from := uint64(1); ; {
		recs, err := j.Read(ctx, p.reg.Stream, from, 1000)
		if err != nil {
			return fmt.Errorf("read %s from #%d: %w", p.reg.Stream, from, err)
		}
		for _, rec := range recs {
			msgs, err := proj.Messages(ctx, rec, p.reg)
			if err != nil {
				return fmt.Errorf("project %s#%d for %s: %w", rec.Stream, rec.Seq, p.reg.ID, err)
			}
			for _, m := range msgs {
				p.want = append(p.want, expected{Record: rec, Message: m})
			}
			if proj.Terminal(rec) {
				return nil
			}
		}
		if len(recs) == 0 {
			return nil
		}
		from = recs[len(recs)-1].Seq + 1
	}
}

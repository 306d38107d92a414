package wire

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/riverqueue/river"
)

// DeliveryArgs is River's job: one event for one receiver, with the payload
// in the job (as a job queue user enqueues a webhook delivery: the worker
// needs no second query).
type DeliveryArgs struct {
	URL     string          `json:"url"`
	Route   int             `json:"route"`
	EventID string          `json:"event_id"`
	Payload json.RawMessage `json:"payload"`
}

// Kind implements river.JobArgs.
func (DeliveryArgs) Kind() string { return "webhook_delivery" }

// DeliveryWorker POSTs a DeliveryArgs job's payload with a keep-alive
// client; a non-2xx answer fails the job (River retries it).
type DeliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	Client  *http.Client
	Signers *Signers
}

// Work implements river.Worker.
func (w *DeliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	wh, err := w.Signers.For(job.Args.Route)
	if err != nil {
		return err
	}
	return Post(ctx, w.Client, job.Args.URL, job.Args.EventID, job.Args.Payload, wh)
}

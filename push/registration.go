package push

import "github.com/heraldpush/herald/store"

// Registration is one subscription: deliver a stream's records to a URL
// (store.Registration says each field).
type Registration = store.Registration

// Config is a registration's projection settings (store.Config).
type Config = store.Config

// RejectPolicy is what a worker does with a record the receiver rejects
// (store.RejectPolicy).
type RejectPolicy = store.RejectPolicy

// The reject policies (store.RejectRetry, store.RejectSkip).
const (
	RejectRetry = store.RejectRetry
	RejectSkip  = store.RejectSkip
)

// ErrLeaseLost is store.ErrLeaseLost: another worker or an operator took the
// registration over; the worker drops its turn quietly.
var ErrLeaseLost = store.ErrLeaseLost

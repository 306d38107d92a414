// Package herald is a durable push engine: an append-only journal per stream,
// a cursor per receiver, and workers that deliver records as ActivityPub
// activities, CloudEvents, A2A push notifications or Standard Webhooks, at
// least once and in order. The domain lives in the journal and push
// packages; stores, transport and projections in their own packages.
package herald

// Version is herald's version, sent in the User-Agent (herald/<Version>).
const Version = "0.1.0"

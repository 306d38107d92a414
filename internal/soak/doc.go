// Package soak drives a store through a steady load on a simulated clock
// (appends, deliveries to loopback receivers, one receiver that goes down,
// parks and is unparked, pruning) and samples what the database keeps, so
// that a test can show that retention keeps it bounded and loses nothing.
// A tick is one simulated second of the soak's Clock, which the store
// (WithClock), every RunOnce and Prune share: a week of ticks takes minutes.
package soak

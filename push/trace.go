package push

import (
	"net/http"

	"github.com/heraldpush/herald/journal"
)

// withTrace returns msg with the trace context of rec, if it has one: a
// child of its traceparent (journal.ChildTraceparent: the trace id and
// flags kept, a new span id for this delivery) in the traceparent header,
// and its tracestate as given (W3C Trace Context §3).
func withTrace(msg Message, rec journal.Record) Message {
	if rec.Traceparent == "" {
		return msg
	}
	h := msg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Traceparent", journal.ChildTraceparent(rec.Traceparent))
	if rec.Tracestate != "" {
		h.Set("Tracestate", rec.Tracestate)
	}
	msg.Header = h
	return msg
}

// Package cloudevents is herald's CloudEvents projection, for the
// "cloudevents" namespace: each record becomes one CloudEvent (CloudEvents
// v1.0.2) POSTed over HTTP (HTTP Protocol Binding v1.0.2), encoded by
// sdk-go (github.com/cloudevents/sdk-go/v2), whose HTTP binding writes the
// message's headers and body: herald writes no ce- header itself.
//
// The context attributes ("Context Attributes") come from the record and
// the registration's config ([Config]):
//
//	specversion      "1.0"
//	id               record id (also the message id: stable across retries)
//	source           config "source", a URI-reference
//	type             record kind, e.g. "com.github.push"
//	subject          record stream, e.g. "repo/octo-org/octo-repo"
//	time             record appended-at, RFC 3339 in UTC (omitted if zero)
//	datacontenttype  record content type (journal.DefaultContentType when empty)
//	data             record payload
//
// Binary content mode (HTTP binding §3.1) is the default: the body is the
// payload as appended, Content-Type is the datacontenttype (§3.1.1), and
// every other attribute is a ce- header (§3.1.3). With config
// "structured": true, structured content mode (§3.2) sends the event as one
// JSON object (JSON Event Format v1.0.2) as StructuredContentType, the
// payload under "data" as a JSON value when its type is application/json
// or text/json and it is JSON, as a JSON string for any other text/* type,
// and base64 under "data_base64" otherwise and whenever it is not UTF-8
// (sdk-go would write other +json types as a JSON string, which JSON
// format §3.1.1 forbids). A config "token" adds "Authorization: Bearer
// <token>" (RFC 6750 §2.1). A retry sends the first attempt's bytes.
//
// sdk-go v2 writes ce- header values as they are, without the
// percent-encoding of non-ASCII characters that HTTP binding §3.1.3.2 asks
// for: a stream, kind or id outside printable ASCII travels as raw UTF-8 in
// binary mode (which sdk-go receivers read back as sent); structured mode
// carries them in the JSON body.
package cloudevents

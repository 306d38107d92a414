// Package cloudevents is herald's CloudEvents projection, for the
// "cloudevents" namespace: each record becomes one CloudEvent (CloudEvents
// v1.0.2) POSTed over HTTP (HTTP Protocol Binding v1.0.2), encoded by
// sdk-go (github.com/cloudevents/sdk-go/v2), which writes the ce- headers.
//
// The context attributes come from the record and the config ([Config]):
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
// payload as appended, Content-Type the datacontenttype, every other
// attribute a ce- header. With config "structured": true, structured content
// mode (§3.2) sends one JSON object (JSON Event Format v1.0.2) as
// StructuredContentType: the payload is "data" as a JSON value when its
// type is application/json or text/json and it is JSON, as a string for
// other text/* types, else "data_base64" (also whenever it is not UTF-8;
// JSON format §3.1.1). A config "token" adds "Authorization: Bearer
// <token>" (RFC 6750 §2.1).
//
// In binary mode each ce- header value is percent-encoded as HTTP binding
// §3.1.3.2 says (space, '"', '%' and non-ASCII; other values go as they
// are), which sdk-go v2 does not do. Receivers on sdk-go v2.16 do not
// decode either (cloudevents/sdk-go#1331): they see such an id, kind or
// stream as its encoding, and get it as it is in structured mode.
package cloudevents

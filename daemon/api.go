package daemon

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// APIHandler serves the HTTP API that producers and operators in any
// language use; the OpenAPI document at /v1/openapi.json is its contract.
// Without Options.APIToken it answers only a loopback name (package doc):
// mounted on a server of your own under another name, give it a token.
func (d *Daemon) APIHandler() http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range d.apiRoutes() {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, d.opts.MaxBody)
			h.ServeHTTP(w, r)
		})
	}
	return guard(mux, d.opts.APIToken, "herald api", "HERALD_API_TOKEN")
}

// apiRoutes are the HTTP API's routes, by "METHOD /path"; the OpenAPI test
// checks the document against them.
func (d *Daemon) apiRoutes() map[string]endpoint {
	return map[string]endpoint{
		"GET /v1/openapi.json":   func(*http.Request) (any, error) { return json.RawMessage(openAPIJSON), nil },
		"POST /v1/records":       endpoint(d.postRecords),
		"GET /v1/records/status": endpoint(d.recordStatus),
		"POST /v1/registrations": endpoint(d.postRegistration),
		"GET /v1/registrations":  listRegistrations(d.store),
		"GET /v1/registration": keyed(nil, nil, func(r *http.Request, k push.Key, _ url.Values) (any, error) {
			return operator.Registration(r.Context(), d.store, k.Stream, k.ID)
		}),
		"DELETE /v1/registration": keyed(nil, nil, func(r *http.Request, k push.Key, _ url.Values) (any, error) {
			return withStatus{code: http.StatusNoContent}, d.store.Unregister(r.Context(), k.Stream, k.ID)
		}),
		"POST /v1/registration/unpark":  unparkOne(d.store, d.opts.Now, d.wake),
		"POST /v1/registrations/unpark": unparkAll(d.store, d.opts.Now, d.wake),
	}
}

// appendRequest is the body of POST /v1/records.
type appendRequest struct {
	Stream  string            `json:"stream"`
	Records []json.RawMessage `json:"records"`
}

// recordRequest is one record of an appendRequest: Payload any JSON value,
// stored as sent, or PayloadBase64 (RFC 4648 §4, padded) any bytes.
type recordRequest struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"`
	ContentType   string          `json:"content_type"`
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 *string         `json:"payload_base64"`
	Final         bool            `json:"final"`
	Traceparent   string          `json:"traceparent"`
	Tracestate    string          `json:"tracestate"`
}

// appendResponse answers POST /v1/records.
type appendResponse struct {
	Stream  string                `json:"stream"`
	Records []operator.RecordView `json:"records"`
}

func (d *Daemon) postRecords(r *http.Request) (any, error) {
	var req appendRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Records == nil {
		return nil, journal.Invalid("records", "is missing: give an array of records")
	}
	tp, ts, err := headerTrace(r.Header)
	if err != nil {
		return nil, err
	}
	entries := make([]journal.Entry, len(req.Records))
	for i, raw := range req.Records {
		e, err := entryOf(raw, fmt.Sprintf("records[%d]", i))
		if err != nil {
			return nil, err
		}
		if e.Traceparent == "" && e.Tracestate == "" {
			e.Traceparent, e.Tracestate = tp, ts
		}
		entries[i] = e
	}
	if _, err := journal.ValidateEntries(req.Stream, entries, 0); err != nil {
		return nil, apiFields(err)
	}
	// Whether anything is new decides 201 or 200. A lookup before the
	// append answers it: a racing identical request may make both 201, and
	// either way nothing is written twice (the append is idempotent).
	created := false
	for _, e := range entries {
		if _, err := d.store.Lookup(r.Context(), e.ID); errors.Is(err, journal.ErrNotFound) {
			created = true
			break
		} else if err != nil {
			return nil, err
		}
	}
	recs, err := d.store.Append(r.Context(), req.Stream, entries...)
	if err != nil {
		return nil, apiFields(err)
	}
	out := appendResponse{req.Stream, make([]operator.RecordView, len(recs))}
	for i, rec := range recs {
		out.Records[i] = operator.ViewRecord(rec)
	}
	if !created {
		return out, nil
	}
	d.wakeAll()
	return withStatus{http.StatusCreated, out}, nil
}

// entryOf decodes one record of a POST /v1/records body; field names the
// record ("records[2]") in errors.
func entryOf(raw json.RawMessage, field string) (journal.Entry, error) {
	var rr recordRequest
	if err := strictDecode(bytes.NewReader(raw), &rr); err != nil {
		return journal.Entry{}, jsonError(field, err)
	}
	e := journal.Entry{ID: rr.ID, Kind: rr.Kind, ContentType: rr.ContentType, Final: rr.Final,
		Traceparent: rr.Traceparent, Tracestate: rr.Tracestate}
	ct := cmp.Or(e.ContentType, journal.DefaultContentType)
	mt, _, _ := mime.ParseMediaType(ct) // a bad type is the journal's to name
	switch {
	case rr.Payload != nil && rr.PayloadBase64 != nil:
		return e, journal.Invalid(field+".payload", "and payload_base64 are both set: give one")
	case rr.Payload != nil:
		if !journal.IsJSON(mt) {
			return e, journal.Invalid(field+".payload", "is JSON but content_type is %q: send other bytes in payload_base64", ct)
		}
		e.Payload = []byte(rr.Payload)
	case rr.PayloadBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*rr.PayloadBase64)
		if err != nil {
			return e, journal.Invalid(field+".payload_base64", "is not base64 (RFC 4648, padded): %v", err)
		}
		e.Payload = p
	case journal.IsJSON(mt):
		return e, journal.Invalid(field+".payload", "is missing: give a JSON value (null for none), or payload_base64 with a content_type that is not JSON")
	}
	return e, nil
}

// headerTrace reads the W3C trace context of a POST /v1/records request
// (Trace Context §3): one traceparent header, and the tracestate headers
// joined with commas (§3.3.1.1), checked as a record's are.
func headerTrace(h http.Header) (tp, ts string, err error) {
	tps := h.Values("Traceparent")
	if len(tps) > 1 {
		return "", "", journal.Invalid("traceparent header", "is given %d times: give it once", len(tps))
	}
	if len(tps) == 1 {
		if tp = strings.TrimSpace(tps[0]); tp == "" {
			return "", "", journal.Invalid("traceparent header", "is empty: give 00-<trace id>-<parent id>-<flags> or leave it out")
		}
	}
	ts = strings.Join(h.Values("Tracestate"), ",")
	return tp, ts, cmp.Or(journal.ValidateTraceparent("traceparent header", tp), journal.ValidateTracestate("tracestate header", ts, tp))
}

// apiFields renames the libraries' fields to the API's: the journal's
// "entries[i]" are "records[i]", push's on_rejected is on_4xx.
func apiFields(err error) error {
	var ie *journal.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	if i, field, ok := ie.InBatch(); ok {
		return journal.Invalid(fmt.Sprintf("records[%d].%s", i, field), "%s", ie.Reason)
	}
	if field, ok := map[string]string{"entries": "records", "on_rejected": "on_4xx"}[ie.Field]; ok {
		return journal.Invalid(field, "%s", ie.Reason)
	}
	return err
}

// decodeBody reads a JSON request body into v, strictly (no unknown
// fields, nothing after the value). Errors: 415 for another Content-Type,
// 413 past the body's limit (APIHandler), else journal.ErrInvalid.
func decodeBody(r *http.Request, v any) error {
	if r.URL.RawQuery != "" {
		// ?stream=… would be dropped, and the body's stream used.
		return journal.Invalid("query", "%s takes no query parameters: its input is the JSON body", r.URL.Path)
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not served: send application/json", ct)}
	}
	err := strictDecode(r.Body, v)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", mbe.Limit)}
	} else if err != nil {
		return jsonError("body", err)
	}
	return nil
}

// strictDecode decodes one JSON value from r into v: unknown fields and
// anything after the value are errors.
func strictDecode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return errors.New("more than one JSON value")
		}
		return err
	}
	return nil
}

// jsonError is a decoding error as a journal.ErrInvalid naming the field.
func jsonError(where string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := where
		if te.Field != "" {
			field += "." + te.Field
		}
		return journal.Invalid(strings.TrimPrefix(field, "body."), "is a JSON %s; want %s", te.Value, jsonType(te.Type.String()))
	case errors.As(err, &se):
		return journal.Invalid(where, "is not valid JSON (at byte %d): %v", se.Offset, se)
	case errors.Is(err, io.EOF):
		return journal.Invalid(where, "is empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return journal.Invalid(where, "is not valid JSON: it ends too soon")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return journal.Invalid(where, "has unknown field %s", name)
	}
	return journal.Invalid(where, "%v", err)
}

// jsonType names a Go type as the JSON a client sends.
func jsonType(goType string) string {
	switch {
	case goType == "string", goType == "*string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// registrationRequest is the body of POST /v1/registrations. Config, the
// namespace's config object, is stored and never shown again.
type registrationRequest struct {
	Stream     string          `json:"stream"`
	ID         string          `json:"id"`
	Namespace  string          `json:"namespace"`
	URL        string          `json:"url"`
	OnRejected string          `json:"on_4xx"`
	Kinds      []string        `json:"kinds"`
	Window     *int            `json:"window"`
	FromSeq    *uint64         `json:"from_seq"`
	Config     json.RawMessage `json:"config"`
}

func (d *Daemon) postRegistration(r *http.Request) (any, error) {
	var req registrationRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	wk := d.byNS[req.Namespace]
	if wk == nil {
		return nil, journal.Invalid("namespace", "%q is not served by this daemon (it serves %s)", req.Namespace, strings.Join(d.served, ", "))
	}
	reg := push.Registration{Stream: req.Stream, ID: req.ID, Namespace: req.Namespace, URL: req.URL, Kinds: req.Kinds, NextSeq: 1,
		OnRejected: push.RejectPolicy(cmp.Or(req.OnRejected, string(push.RejectRetry))), Config: push.Config(req.Config)}
	if req.Window != nil {
		if *req.Window == 0 { // the library reads 0 as 1; a client that sends 0 means something else
			return nil, journal.Invalid("window", "is 0: it must be 1 to %d", push.MaxWindow)
		}
		reg.Window = *req.Window
	}
	if req.FromSeq != nil {
		reg.NextSeq = *req.FromSeq
	}
	code := http.StatusCreated
	if _, err := d.store.Get(r.Context(), reg.Stream, reg.ID); err == nil {
		code = http.StatusOK
	}
	stored, err := wk.Register(r.Context(), reg)
	if err != nil {
		return nil, apiFields(err)
	}
	st, err := d.store.Get(r.Context(), stored.Stream, stored.ID)
	if err != nil {
		return nil, err
	}
	var warnings []string                                                           // the transport's refusals, each naming the flag that lifts it: another daemon may allow the URL
	if tr, ok := d.opts.Transport.(interface{ Refusals(raw string) []error }); ok { // transport.HTTP
		for _, err := range tr.Refusals(st.URL) {
			warnings = append(warnings, "this daemon's deliveries refuse this URL and would park the registration: "+err.Error())
		}
	}
	if note := operator.WindowNote(st.Window, wk.MaxPerHost(), "this daemon's"); note != "" {
		warnings = append(warnings, note)
	}
	return withStatus{code, operator.RegisteredView{RegistrationView: operator.Held(nil).View(st), Warnings: warnings}}, nil
}

// recordStatus answers GET /v1/records/status?id=ID or ?stream=S&seq=N.
func (d *Daemon) recordStatus(r *http.Request) (any, error) {
	q, err := strictQuery(r, "a record is named by ?id=… or ?stream=…&seq=…", "id", "stream", "seq")
	if err != nil {
		return nil, err
	}
	return operator.RecordStatusOf(r.Context(), d.store, q.Get("id"), q.Get("stream"), q.Get("seq"))
}

// openAPIYAML is the HTTP API's OpenAPI 3.1 document, written by hand;
// openapi_test.go checks it against the handlers.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the document as GET /v1/openapi.json serves it.
var openAPIJSON = func() []byte {
	var doc any
	err := yaml.Unmarshal(openAPIYAML, &doc)
	b, jerr := json.MarshalIndent(doc, "", "  ")
	if err = cmp.Or(err, jerr); err != nil {
		panic("daemon: openapi.yaml: " + err.Error()) // embedded and tested: a build defect, not input
	}
	return append(b, '\n')
}()

// wake wakes namespace's worker, if this daemon runs one.
func (d *Daemon) wake(namespace string) {
	if wk := d.byNS[namespace]; wk != nil {
		wk.Wake()
	}
}

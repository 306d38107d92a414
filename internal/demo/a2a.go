package demo

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/heraldpush/herald/projection/a2a"
)

// a2aReceiver is an A2A client's push notification webhook (A2A 1.0
// §4.3.3): it checks the Content-Type, the Authorization credentials and the
// notification token in both headers herald sends (A2A-Notification-Token,
// read by a2a-go v2, and X-A2A-Notification-Token, read by v0.3 SDKs), then
// decodes the body with a2a-go v2 as an a2a.StreamResponse, checks that it
// is about the task whose stream it follows, and checks it against the
// journal (the body, byte for byte, in order).
type a2aReceiver struct {
	token, authorization string
	ledger               *ledger
}

func (r *a2aReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(req)
	var ev v1.Event
	if err == nil {
		ev, err = r.verify(req, body)
	}
	if err != nil {
		refuse(w, r.ledger.fail(req.URL.Path, err))
		return
	}
	task := string(ev.TaskInfo().TaskID)
	_, err = r.ledger.check(req.URL.Path, "", body, func(x expected) error {
		if x.Record.Stream != "task/"+task {
			return fmt.Errorf("the notification is about task %q, but it was sent for stream %s", task, x.Record.Stream)
		}
		return nil
	})
	if err != nil {
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *a2aReceiver) verify(req *http.Request, body []byte) (v1.Event, error) {
	if ct := req.Header.Get("Content-Type"); ct != a2a.ContentType10 {
		return nil, fmt.Errorf("Content-Type %q, want %q", ct, a2a.ContentType10)
	}
	for _, c := range []struct{ header, want string }{
		{"Authorization", r.authorization},
		{a2a.TokenHeader, r.token},
		{a2a.LegacyTokenHeader, r.token},
	} {
		if got := req.Header.Get(c.header); subtle.ConstantTimeCompare([]byte(got), []byte(c.want)) != 1 {
			return nil, fmt.Errorf("%s is missing or wrong", c.header)
		}
	}
	var sr v1.StreamResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		return nil, fmt.Errorf("a2a-go cannot decode the body as a StreamResponse: %w", err)
	}
	if sr.Event == nil || sr.Event.TaskInfo().TaskID == "" {
		return nil, fmt.Errorf("the StreamResponse names no task")
	}
	return sr.Event, nil
}

package daemon

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// keyRequest is the body of POST /v1/keys and POST /v1/key/rotate.
type keyRequest struct {
	KeyID      string `json:"key_id"`
	PrivateKey string `json:"private_key"`
}

// keyRoutes are the routes of actors' keys held once, on both addresses:
// list (never a private key), add, rotate, remove.
func keyRoutes(db store.Backend, now func() time.Time) map[string]endpoint {
	body := func(r *http.Request) (keyRequest, error) {
		var req keyRequest
		err := decodeBody(r, &req)
		return req, err
	}
	return map[string]endpoint{"GET /v1/keys": func(r *http.Request) (any, error) {
		if r.URL.RawQuery != "" {
			return nil, journal.Invalid("query", "is not read: GET /v1/keys takes no parameters")
		}
		return operator.Keys(r.Context(), db)
	}, "POST /v1/keys": func(r *http.Request) (any, error) {
		req, err := body(r)
		if err != nil {
			return nil, err
		}
		v, err := operator.AddKey(r.Context(), db, "key_id", "private_key", req.KeyID, []byte(req.PrivateKey), now())
		if err != nil {
			return nil, err
		}
		return withStatus{http.StatusCreated, v}, nil
	}, "POST /v1/key/rotate": func(r *http.Request) (any, error) {
		req, err := body(r)
		if err != nil {
			return nil, err
		}
		return operator.RotateKey(r.Context(), db, "key_id", "private_key", req.KeyID, []byte(req.PrivateKey), now())
	}, "DELETE /v1/key": func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one key: /v1/key?key_id=…", "key_id", "force")
		if err == nil && q.Get("key_id") == "" {
			err = journal.Invalid("query", "key_id is a required query parameter (/v1/key?key_id=…, URL-encoded)")
		}
		if err != nil {
			return nil, err
		}
		force, err := boolParam(q, "force")
		if err != nil {
			return nil, err
		}
		users, err := operator.RemoveKey(r.Context(), db, q.Get("key_id"), force)
		if inUse, ok := errors.AsType[*operator.KeyInUseError](err); ok {
			inUse.Force = "force=true"
		}
		if err != nil {
			return nil, err
		}
		return operator.RemovedKey{ID: q.Get("key_id"), Registrations: users}, nil
	}}
}

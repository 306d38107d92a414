package daemon

import (
	"net/http"
	"time"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// tokenRequest is the body of POST /v1/tokens.
type tokenRequest struct {
	Name  string   `json:"name"`
	Role  string   `json:"role"`
	Scope []string `json:"scope"`
}

// tokenRoutes are the routes of tokens, on both addresses: list, create
// (the secret is in that answer only), revoke.
func tokenRoutes(tokens store.TokenStore, now func() time.Time) map[string]endpoint {
	return map[string]endpoint{"GET /v1/tokens": func(r *http.Request) (any, error) {
		if r.URL.RawQuery != "" {
			return nil, journal.Invalid("query", "is not read: GET /v1/tokens takes no parameters")
		}
		return operator.Tokens(r.Context(), tokens)
	}, "POST /v1/tokens": func(r *http.Request) (any, error) {
		var req tokenRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		ct, err := operator.CreateToken(r.Context(), tokens, req.Name, req.Role, req.Scope, now())
		if err != nil {
			return nil, err
		}
		return withStatus{http.StatusCreated, ct}, nil
	}, "POST /v1/token/revoke": func(r *http.Request) (any, error) {
		q, err := strictQuery(r, "one token: /v1/token/revoke?id=…", "id")
		if err == nil && q.Get("id") == "" {
			err = journal.Invalid("query", "id is a required query parameter (/v1/token/revoke?id=tok_…)")
		}
		if err != nil {
			return nil, err
		}
		t, err := tokens.RevokeToken(r.Context(), q.Get("id"), now())
		return operator.ViewToken(t), err
	}}
}

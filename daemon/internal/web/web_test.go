package web

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/heraldpush/herald/internal/operator"
	"github.com/heraldpush/herald/journal"
	"github.com/stretchr/testify/require"
)

// LoopbackHost takes every way a client names a loopback address, and no
// other name.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:9465": true, "127.1.2.3:80": true, "localhost": true, "LOCALHOST:9465": true,
		"[::1]:9465": true, "::1": true, "[::1%lo]:9465": true, "[::ffff:127.0.0.1]:1": true, "": true,
		"evil.example": false, "evil.example:9465": false, "127.0.0.1.nip.io": false, "0.0.0.0:9465": false,
		"10.0.0.5:9465": false, "foo.localhost": false, "[::2]:9465": false,
	} {
		require.Equal(t, want, LoopbackHost(host), host)
	}
}

// HTTPStatus maps the journal's sentinels, wrapped or not, and an
// HTTPError's own code to the statuses the APIs and the page answer.
func TestHTTPStatusOfErrors(t *testing.T) {
	for err, want := range map[error]int{
		journal.Invalid("stream", "is empty"):                         http.StatusBadRequest,
		fmt.Errorf("get: %w", journal.ErrNotFound):                    http.StatusNotFound,
		&journal.ConflictError{ID: "a", Field: "kind"}:                http.StatusConflict,
		&journal.SealedError{Stream: "s", FinalSeq: 2}:                http.StatusConflict,
		HTTPError{Code: http.StatusRequestEntityTooLarge, Msg: "x"}:   http.StatusRequestEntityTooLarge,
		errors.New("the database is away"):                            http.StatusInternalServerError,
		fmt.Errorf("%w: needs the admin role", operator.ErrForbidden): http.StatusForbidden,
		fmt.Errorf("%w: revoked", operator.ErrBadToken):               http.StatusUnauthorized,
	} {
		require.Equal(t, want, HTTPStatus(err), err.Error())
	}
}

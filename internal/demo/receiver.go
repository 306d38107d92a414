package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// maxBody bounds what a receiver reads of a request: a record's payload
// (journal.DefaultMaxPayload) and its wire's envelope.
const maxBody = 2 << 20

// Receiver is one local HTTP server on loopback that herald delivers to:
// a verifying receiver of one wire, or a faulty one. It counts, per path
// (one path per registration), what it verified against the journal.
type Receiver struct {
	Name      string // short name; also the id of its registrations
	Namespace string // the wire it receives
	About     string // what it checks or does, for the demo's narration
	// Verifies says that its verified count must equal what the journal
	// says it should have received for the demo to pass.
	Verifies bool

	url    string
	ledger *ledger
	srv    *http.Server
	done   chan struct{}
}

// startReceiver serves h on a fresh loopback port.
func startReceiver(name, namespace, about string, verifies bool, l *ledger, h http.Handler) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the %s receiver on loopback: %w", name, err)
	}
	r := &Receiver{Name: name, Namespace: namespace, About: about, Verifies: verifies, url: "http://" + ln.Addr().String(),
		ledger: l, srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = r.ledger.fail("/", fmt.Errorf("server stopped: %w", err))
		}
	}()
	return r, nil
}

// URL is the receiver's base URL, http://127.0.0.1:port.
func (r *Receiver) URL() string { return r.url }

// Counts returns what the receiver verified on path.
func (r *Receiver) Counts(path string) Counts { return r.ledger.counts(path) }

// Total returns what the receiver verified on all its paths.
func (r *Receiver) Total() Counts { return r.ledger.total() }

// Close stops the server, waiting up to 5 s for requests in flight.
func (r *Receiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	<-r.done
	return err
}

// readBody reads a request's body, up to maxBody bytes.
func readBody(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read the body: %w", err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("the body is larger than %d bytes", maxBody)
	}
	return body, nil
}

// refuse answers a verification failure: 401 with the reason, which herald
// keeps as evidence.
func refuse(w http.ResponseWriter, err error) {
	http.Error(w, "not verified: "+err.Error(), http.StatusUnauthorized)
}

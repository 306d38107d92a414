package push_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// h2Receiver is a net/http server speaking HTTP/2 over TLS (ALPN h2) on
// 127.0.0.1 with config, counting its connections, and the transport that
// trusts it.
type h2Receiver struct {
	*httptest.Server
	conns atomic.Int64
	tr    push.Transport
}

func newH2Receiver(t *testing.T, config *http.HTTP2Config, h http.HandlerFunc) *h2Receiver {
	t.Helper()
	r := &h2Receiver{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.ProtoMajor != 2 {
			http.Error(w, "HTTP/2 only", http.StatusHTTPVersionNotSupported)
			return
		}
		h(w, req)
	}))
	r.EnableHTTP2, r.Config.HTTP2 = true, config
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.StartTLS()
	t.Cleanup(r.Close)
	roots := x509.NewCertPool()
	roots.AddCert(r.Certificate())
	tr, err := transport.New(transport.Options{AllowPrivateNetwork: true, Timeout: waitFor, TLSConfig: &tls.Config{RootCAs: roots}})
	require.NoError(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	r.tr = tr
	return r
}

// A 2xx over HTTP/2 advances the cursor as over HTTP/1.1, and the
// registrations of one HTTP/2 host share its connection: once herald knows
// the host, a sweep of 40 of them, 4 at a time, opens none.
func TestRegistrationsOfOneH2HostShareItsConnection(t *testing.T) {
	recv := newH2Receiver(t, nil, func(w http.ResponseWriter, r *http.Request) {
		if _, ok := recordN(w, r); ok {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	f := newFixture(t)
	f.append("s", 2)
	w := f.workerOn(recv.tr, push.WithMaxPerHost(4), push.WithMaxInFlight(16))
	f.registerURL("s", "first", recv.URL+"/hook/first")
	require.Equal(t, push.SweepReport{Registrations: 1, Records: 2, Deliveries: 2}, f.sweep(w, at(0)))
	require.Equal(t, uint64(3), f.get("s", "first").NextSeq, "advanced past both records")
	require.Equal(t, int64(1), recv.conns.Load(), "connections opened to the host")

	const n = 40
	for i := range n {
		f.registerURL("s", fmt.Sprint(i), fmt.Sprintf("%s/hook/%d", recv.URL, i))
	}
	require.Equal(t, push.SweepReport{Registrations: n, Records: 2 * n, Deliveries: 2 * n}, f.sweep(w, at(1)))
	for i := range n {
		require.Equal(t, uint64(3), f.get("s", fmt.Sprint(i)).NextSeq, "registration %d advanced past both records", i)
	}
	require.Equal(t, int64(1), recv.conns.Load(), "connections opened to the host: its first, shared by all")
}

// A receiver that allows one stream per connection (SETTINGS_MAX_CONCURRENT_STREAMS
// 1) does not queue herald's fan-out behind one stream until its attempts
// time out: each of the 4 messages in flight to the host gets a connection
// of its own at once, and every registration advances. The receiver holds each request until all 4
// are in, which they never are if herald waits for a free stream.
func TestMaxConcurrentStreamsOneParksNoHealthyRegistration(t *testing.T) {
	const perHost = 4
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	recv := newH2Receiver(t, &http.HTTP2Config{MaxConcurrentStreams: 1}, func(w http.ResponseWriter, r *http.Request) {
		if _, ok := recordN(w, r); !ok {
			return
		}
		mu.Lock()
		if arrived++; arrived == perHost {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done(): // herald gave up on it
		}
	})
	f := newFixture(t)
	f.append("s", 1)
	for i := range perHost {
		f.registerURL("s", fmt.Sprint(i), fmt.Sprintf("%s/hook/%d", recv.URL, i))
	}
	w := f.workerOn(recv.tr, push.WithMaxPerHost(perHost), push.WithMaxInFlight(16))

	rep := f.sweep(w, at(0))
	require.Equal(t, push.SweepReport{Registrations: perHost, Records: perHost, Deliveries: perHost}, rep)
	for i := range perHost {
		st := f.get("s", fmt.Sprint(i))
		require.False(t, st.Parked, "registration %d parked", i)
		require.Equal(t, uint64(2), st.NextSeq, "registration %d advanced", i)
		require.Empty(t, f.evidence("s", fmt.Sprint(i)), "registration %d failed an attempt", i)
	}
	require.GreaterOrEqual(t, recv.conns.Load(), int64(perHost), "connections: one a message in flight")
}

// A receiver that resets one registration's stream (RST_STREAM, as a
// net/http handler aborting does) has answered on a connection that serves
// the others: that registration retries, its cursor where it was, the reset
// in its evidence, and the host is not charged.
func TestAnH2StreamResetIsItsRegistrationsFailureNotItsHosts(t *testing.T) {
	recv := newH2Receiver(t, nil, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			panic(http.ErrAbortHandler) // net/http's HTTP/2 server resets the stream: INTERNAL_ERROR
		}
		w.WriteHeader(http.StatusNoContent)
	})
	f := newFixture(t)
	f.append("s", 1)
	f.registerURL("s", "reset", recv.URL+"/reset")
	f.registerURL("s", "ok", recv.URL+"/ok")
	w := f.workerOn(recv.tr)

	require.Equal(t, push.SweepReport{Registrations: 2, Records: 1, Deliveries: 1, Retries: 1}, f.sweep(w, at(0)))
	require.Equal(t, uint64(2), f.get("s", "ok").NextSeq)
	reset := f.get("s", "reset")
	require.Equal(t, uint64(1), reset.NextSeq, "the cursor stays")
	require.False(t, reset.Parked)
	ev := f.evidence("s", "reset")
	require.Len(t, ev, 1)
	require.Equal(t, "stream reset by the receiver (HTTP/2 INTERNAL_ERROR) waiting for the response headers", ev[0].Error)
}

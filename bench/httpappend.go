package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/heraldpush/herald/bench/internal/wire"
	"github.com/heraldpush/herald/daemon"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// httpAppendCases: as sqlappend's.
var httpAppendCases = []producerCase{{1000, 1}, {1000, 32}, {1, 32}}

// httpAppend measures the HTTP API's POST /v1/records (issue 18) beside the
// Go Append it calls: W writers each appending one record per call, for the
// same time, in turn within each run, on one store over one database. The
// API is daemon.APIHandler served by net/http on loopback in this process,
// its clients keeping their connections alive; what it adds is HTTP, JSON
// and the lookup that tells 201 from 200.
func httpAppend(ctx context.Context, e *env, cfg config, rep *report) error {
	type result struct{ goRate, httpRate, goP99, httpP99 sample }
	res := make([]result, len(httpAppendCases))
	for run := 1; run <= cfg.runs; run++ {
		db := fmt.Sprintf("httpappend_%d", run)
		dbURL, err := e.heraldDB(ctx, db)
		if err != nil {
			return err
		}
		st, err := postgres.Open(ctx, withPool(dbURL, 40), postgres.WithKeyring(keyring))
		if err != nil {
			return err
		}
		api, stopAPI, err := serveAPI(st)
		if err != nil {
			st.Close()
			return err
		}
		for i, c := range httpAppendCases {
			for _, viaHTTP := range []bool{false, true} {
				logf("httpappend %v, HTTP %v, run %d/%d", c, viaHTTP, run, cfg.runs)
				out, err := httpAppendFor(ctx, st, api, c, viaHTTP, fmt.Sprintf("h%d-c%d-%v-", run, i, viaHTTP), cfg.producerFor)
				if err != nil {
					stopAPI()
					st.Close()
					return fmt.Errorf("%v: %w", c, err)
				}
				rate := float64(out.n) / out.took.Seconds()
				if viaHTTP {
					res[i].httpRate, res[i].httpP99 = append(res[i].httpRate, rate), append(res[i].httpP99, out.p99)
				} else {
					res[i].goRate, res[i].goP99 = append(res[i].goRate, rate), append(res[i].goP99, out.p99)
				}
				logf("  %.0f appends/s, p99 %.1f ms", rate, out.p99)
			}
		}
		stopAPI()
		st.Close()
		e.dropDB(ctx, db)
	}
	rep.printf("### Appending over HTTP: POST /v1/records beside Append\n\n")
	rep.printf("W goroutines append one %d-byte record per call for %v per case: with the Go `Append` of store/postgres, and with `POST /v1/records` (one record per request, `application/json`) to `daemon.APIHandler` served by net/http on loopback in the same process (keep-alive connections, one per writer), which validates and calls the same `Append` on the same store; in turn within each run on one database. `Append` returns once its record is numbered (the store's sequencer step).\n\n",
		wire.PayloadBytes, cfg.producerFor)
	rep.printf("| case | Append /s | HTTP API /s | HTTP / Append | Append p99 ms | HTTP p99 ms |\n|---|---:|---:|---:|---:|---:|\n")
	for i, c := range httpAppendCases {
		r := res[i]
		rep.printf("| %v | %s | %s | %s | %s | %s |\n", c, r.goRate.cell(0), r.httpRate.cell(0), ratio(r.httpRate, r.goRate),
			fmtNum(r.goP99.median(), 1), fmtNum(r.httpP99.median(), 1))
	}
	rep.printf("\n")
	return nil
}

// serveAPI serves st's HTTP API on a loopback port; it returns the base URL
// and how to stop it.
func serveAPI(st *postgres.Store) (string, func(), error) {
	noSend := push.TransportFunc(func(context.Context, push.Registration, push.Message, time.Time) (push.Outcome, error) {
		return push.Outcome{}, errors.New("the httpappend workload delivers nothing")
	})
	d, err := daemon.New(daemon.Options{Store: st, Transport: noSend, Projections: []push.Projection{webhook.New()},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: d.APIHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// httpAppendFor runs c's writers for d, each appending one record per call,
// through Append or the HTTP API at api.
func httpAppendFor(ctx context.Context, st *postgres.Store, api string, c producerCase, viaHTTP bool, prefix string, d time.Duration) (produced, error) {
	var out produced
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.writers}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	type record struct {
		ID      string          `json:"id"`
		Kind    string          `json:"kind"`
		Payload json.RawMessage `json:"payload"`
	}
	type body struct {
		Stream  string   `json:"stream"`
		Records []record `json:"records"`
	}
	lats, took, firstErr := writeFor(ctx, c.writers, d, func(w, k int, n int64) error {
		id := fmt.Sprintf("%sw%d-%d", prefix, w, k)
		stream := fmt.Sprintf("order/%d", n%int64(c.streams))
		if !viaHTTP {
			_, err := st.Append(ctx, stream, journal.Entry{ID: id, Kind: "order.updated", ContentType: "application/json", Payload: wire.Payload(k)})
			return err
		}
		b, _ := json.Marshal(body{Stream: stream, Records: []record{{ID: id, Kind: "order.updated", Payload: wire.Payload(k)}}})
		resp, err := client.Post(api+"/v1/records", "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST /v1/records: %s: %s", resp.Status, msg)
		}
		return nil
	})
	out.took = took
	return out, out.count(lats, d, "append", firstErr)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"
)

// storeKinds are the stores the audience and slots workloads run on, by
// the name the report gives them.
var storeKinds = []string{"sqlite", "postgres"}

// apiDaemon is `herald run` with its defaults, serving the HTTP API (the
// one flag beside --allow-http and --allow-private-network) on a free
// loopback port, with its metrics and admin servers off (their default
// addresses may be another engineer's daemon's).
type apiDaemon struct {
	p      *proc
	api    string // http://127.0.0.1:PORT
	client *http.Client
}

// freshDatabase makes an empty, migrated database of kind (sqlite or
// postgres) named name and returns herald's --database for it and a
// function that removes it.
func freshDatabase(ctx context.Context, e *env, kind, name string) (string, func(), error) {
	if kind == "postgres" {
		u, err := e.heraldDB(ctx, name)
		return u, func() { e.dropDB(ctx, name) }, err
	}
	db := "sqlite:" + filepath.Join(e.tmp, name+".db")
	out, err := exec.CommandContext(ctx, e.herald, "migrate", "up", "--database", db).CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("herald migrate up --database %s: %v\n%s", db, err, out)
	}
	return db, func() {}, nil
}

// startAPIDaemon starts `herald run` on database with extraEnv and waits
// until its HTTP API answers.
func startAPIDaemon(ctx context.Context, e *env, name, database string, extraEnv []string) (*apiDaemon, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"run", "--database", database, "--allow-http", "--allow-private-network",
		"--api-addr", addr, "--metrics-addr", "", "--admin-addr", ""}
	p, err := startProc(e, name, e.herald, args, extraEnv)
	if err != nil {
		return nil, err
	}
	d := &apiDaemon{p: p, api: "http://" + addr, client: &http.Client{
		Timeout:   time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, MaxConnsPerHost: 32},
	}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := d.client.Get(d.api + "/v1/openapi.json")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before its API answered (%v); see %s", name, p.err, p.log)
		case <-ctx.Done():
			_ = p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, fmt.Errorf("%s: its API on %s did not answer within 30 s (%v); see %s", name, addr, err, p.log)
		}
	}
}

// post sends v as JSON to the API's path and returns the answer's body; an
// answer other than 200 or 201 is an error.
func (d *apiDaemon) post(ctx context.Context, path string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.api+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("POST %s: %s %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, err
}

// apiRegistration is the body of POST /v1/registrations.
type apiRegistration struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	URL       string `json:"url"`
	Config    any    `json:"config"`
}

// apiRecord is one record of POST /v1/records.
type apiRecord struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Payload any    `json:"payload"`
}

// register makes regs over the API, 16 requests at once, and returns how
// long it took.
func (d *apiDaemon) register(ctx context.Context, regs []apiRegistration) (time.Duration, error) {
	start := time.Now()
	err := parallel(ctx, 16, len(regs), func(i int) error {
		_, err := d.post(ctx, "/v1/registrations", regs[i])
		return err
	})
	return time.Since(start), err
}

// appendRecords appends recs to stream over the API in one request and
// returns their seqs.
func (d *apiDaemon) appendRecords(ctx context.Context, stream string, recs ...apiRecord) ([]uint64, error) {
	body, err := d.post(ctx, "/v1/records", map[string]any{"stream": stream, "records": recs})
	if err != nil {
		return nil, err
	}
	var resp struct {
		Records []struct {
			Seq uint64 `json:"seq"`
		} `json:"records"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("POST /v1/records: the answer: %w", err)
	}
	seqs := make([]uint64, len(resp.Records))
	for i, r := range resp.Records {
		seqs[i] = r.Seq
	}
	return seqs, nil
}

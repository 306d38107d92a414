// Command receiver is the benchmark's webhook receiver: an HTTP server on a
// loopback port that answers 200 to every POST and counts what it got, per
// group and per route. The benchmark runner starts it as a separate process
// (so that its CPU and memory are its own) and asks it for counts.
//
// It prints "listening http://127.0.0.1:PORT" on stdout once it serves, and
// with -hosts N a second line, "hosts URL…", of N more addresses it serves
// the same on, 127.0.1.1 to 127.0.1.N: other hosts, as far as a sender's
// per-host cap is concerned. It exits when its standard input closes (the
// runner died or is done).
//
// Routes:
//
//	POST /d/GROUP/ROUTE      200, counted; for groups whose name starts with
//	                         "lat", the receipt instant (unix ns) is kept by
//	                         the webhook-id header; ?delay=50ms answers (and
//	                         counts) after that long, a far receiver
//	GET  /wait?group=G&n=N   blocks until G has N requests (or 15 min pass);
//	                         answers the group's stats as JSON
//	GET  /stats?group=G      the group's stats as JSON
//	GET  /routes?group=G     requests per route as JSON
//	GET  /receipts?group=G   [[webhook-id, unix ns], …] of a "lat" group
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type receipt struct {
	ID string
	NS int64
}

type group struct {
	mu       sync.Mutex
	count    int64
	routes   map[string]int64
	firstNS  int64
	lastNS   int64
	reached  map[int64]int64 // n → unix ns when count reached n, for waiters
	waiters  map[int64][]chan struct{}
	receipts []receipt
	inFlight int64 // requests read and not yet answered
	// mostInFlight is the most requests of the group the receiver held at
	// once: a sender's concurrency, as its receiver saw it.
	mostInFlight int64
}

// Stats is what /wait and /stats answer.
type Stats struct {
	Count     int64 `json:"count"`
	Routes    int   `json:"routes"`
	FirstNS   int64 `json:"first_ns"`
	LastNS    int64 `json:"last_ns"`
	ReachedNS int64 `json:"reached_ns,omitempty"` // /wait: when the count reached n
	// MostInFlight is the most requests of the group held at once.
	MostInFlight int64 `json:"most_in_flight"`
}

type server struct {
	mu     sync.Mutex
	groups map[string]*group
}

func (s *server) group(name string) *group {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		g = &group{routes: map[string]int64{}, reached: map[int64]int64{}, waiters: map[int64][]chan struct{}{}}
		s.groups[name] = g
	}
	return g
}

func (s *server) deliver(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rest := strings.TrimPrefix(r.URL.Path, "/d/")
	name, route, ok := strings.Cut(rest, "/")
	if !ok || r.Method != http.MethodPost {
		http.Error(w, "POST /d/GROUP/ROUTE", http.StatusNotFound)
		return
	}
	g := s.group(name)
	g.mu.Lock()
	g.inFlight++
	g.mostInFlight = max(g.mostInFlight, g.inFlight)
	g.mu.Unlock()
	if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil && d > 0 && d < time.Minute {
		time.Sleep(d) // the receiver's own slowness, what the workload measures against
	}
	now := time.Now().UnixNano()
	g.mu.Lock()
	g.inFlight--
	g.count++
	g.routes[route]++
	if g.firstNS == 0 {
		g.firstNS = now
	}
	g.lastNS = now
	if strings.HasPrefix(name, "lat") {
		g.receipts = append(g.receipts, receipt{ID: r.Header.Get("Webhook-Id"), NS: now})
	}
	if chs, ok := g.waiters[g.count]; ok {
		g.reached[g.count] = now
		for _, ch := range chs {
			close(ch)
		}
		delete(g.waiters, g.count)
	}
	g.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (g *group) stats() Stats {
	return Stats{Count: g.count, Routes: len(g.routes), FirstNS: g.firstNS, LastNS: g.lastNS, MostInFlight: g.mostInFlight}
}

func (s *server) wait(w http.ResponseWriter, r *http.Request) {
	g := s.group(r.URL.Query().Get("group"))
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil || n < 1 {
		http.Error(w, "n must be a positive integer", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	if g.count >= n {
		st := g.stats()
		st.ReachedNS = g.reached[n]
		if st.ReachedNS == 0 {
			st.ReachedNS = g.lastNS
		}
		g.mu.Unlock()
		writeJSON(w, st)
		return
	}
	ch := make(chan struct{})
	g.waiters[n] = append(g.waiters[n], ch)
	g.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(15 * time.Minute):
		http.Error(w, "timed out", http.StatusGatewayTimeout)
		return
	case <-r.Context().Done():
		return
	}
	g.mu.Lock()
	st := g.stats()
	st.ReachedNS = g.reached[n]
	g.mu.Unlock()
	writeJSON(w, st)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	s := &server{groups: map[string]*group{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/d/", s.deliver)
	mux.HandleFunc("GET /wait", s.wait)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		g := s.group(r.URL.Query().Get("group"))
		g.mu.Lock()
		defer g.mu.Unlock()
		writeJSON(w, g.stats())
	})
	mux.HandleFunc("GET /routes", func(w http.ResponseWriter, r *http.Request) {
		g := s.group(r.URL.Query().Get("group"))
		g.mu.Lock()
		defer g.mu.Unlock()
		writeJSON(w, g.routes)
	})
	mux.HandleFunc("GET /receipts", func(w http.ResponseWriter, r *http.Request) {
		g := s.group(r.URL.Query().Get("group"))
		g.mu.Lock()
		out := make([][2]any, len(g.receipts))
		for i, rc := range g.receipts {
			out[i] = [2]any{rc.ID, rc.NS}
		}
		g.mu.Unlock()
		writeJSON(w, out)
	})
	hosts := flag.Int("hosts", 0, "also serve on 127.0.1.1 to 127.0.1.N (at most 250)")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
	var extra []string
	for i := 1; i <= min(*hosts, 250); i++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.1.%d:0", i))
		if err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
			os.Exit(1)
		}
		extra = append(extra, "http://"+l.Addr().String())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	if len(extra) > 0 {
		fmt.Printf("hosts %s\n", strings.Join(extra, " "))
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the runner holds our stdin: EOF means it is gone
		os.Exit(0)
	}()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

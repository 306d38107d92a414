package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// report accumulates the markdown tables.
type report struct{ b strings.Builder }

func (r *report) printf(format string, args ...any) {
	fmt.Fprintf(&r.b, format, args...)
	fmt.Fprintf(os.Stderr, format, args...) // progress: each table as soon as it is done
}

func (r *report) write(path string) error {
	fmt.Print(r.b.String())
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(r.b.String()), 0o644)
}

func (r *report) header(e *env, cfg config) {
	mode := "full"
	if cfg.quick {
		mode = "quick"
	}
	r.printf("## herald vs River vs the machine's limit\n\n")
	r.printf("Run on %s (%s mode, %d run(s) of each measurement; figures are the median and, in brackets, min–max).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), mode, cfg.runs)
	r.printf("- **Load**: load average %s at the start (other users of the machine add to it; see the end of the run).\n", loadavg())
	r.printf("- **Command**: `cd bench && go run . %s` (from the repository root).\n", strings.Join(os.Args[1:], " "))
	r.printf("- **Machine**: %s. The benchmark runner, the receiver, PostgreSQL and the worker share these cores.\n", e.machine)
	r.printf("- **Versions**: %s, PostgreSQL %s, River %s (riverpgxv5), pgx %s, herald %s.\n",
		e.goVersion, e.pgVersion, e.riverVersion, e.pgxVersion, e.commit)
	r.printf("- **PostgreSQL**: the throwaway cluster of herald's test harness (internal/pgtest) on loopback TCP, with fsync, synchronous_commit and full_page_writes **on** (commits pay for durability, as in production), shared_buffers 256MB, otherwise defaults.\n")
	r.printf("- **Receiver**: a separate process (bench/cmd/receiver) on 127.0.0.1 that reads each request's body, counts it per route and answers 200.\n")
	r.printf("- **Concurrency**: %d deliveries in flight for all three senders: herald `--max-in-flight %d`, River `MaxWorkers: %d` (with `FetchCooldown: %v`; River's default of 100 ms would cap the queue at %d jobs/s), the bare client's %d goroutines; each keeps %d keep-alive connections.\n",
		cfg.conc, cfg.conc, cfg.conc, cfg.riverCool, cfg.conc*10, cfg.conc, cfg.conc)
	r.printf("- **Wire**: every sender POSTs the same %d-byte JSON payload with Standard Webhooks headers, signed (HMAC-SHA256) with the receiver's own secret.\n\n", wirePayloadBytes)
}

// sample is one measurement's values over the runs.
type sample []float64

func (s sample) sorted() []float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func (s sample) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

func (s sample) min() float64 { return slices.Min(s) }
func (s sample) max() float64 { return slices.Max(s) }

// fmtNum formats v with thousands separators and the given decimals.
func fmtNum(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := fmt.Sprintf("%.*f", decimals, v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// cell is "median (min–max)", or the median alone for one run.
func (s sample) cell(decimals int) string {
	if len(s) == 0 {
		return "–"
	}
	if len(s) == 1 {
		return fmtNum(s[0], decimals)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtNum(s.median(), decimals), fmtNum(s.min(), decimals), fmtNum(s.max(), decimals))
}

// ratio is a/b of the medians and, with several runs, in brackets the
// range of the per-run ratios a[i]/b[i] (the runs are interleaved, so each
// pair shared the machine's load of its moment).
func ratio(a, b sample) string {
	if len(a) == 0 || len(b) == 0 || b.median() == 0 {
		return "–"
	}
	s := fmtRatio(a.median()/b.median()) + "×"
	if len(a) == len(b) && len(a) > 1 {
		var per sample
		for i := range a {
			per = append(per, a[i]/b[i])
		}
		s += fmt.Sprintf(" (%s–%s)", fmtRatio(per.min()), fmtRatio(per.max()))
	}
	return s
}

// fmtRatio gives two significant decimals, more for small ratios (0.0023).
func fmtRatio(v float64) string {
	switch {
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadavg is /proc/loadavg's 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

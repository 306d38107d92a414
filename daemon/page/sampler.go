package page

import (
	"context"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldpush/herald/push"
)

// maxSamples is an hour of one-minute samples (RunSampler), and one more
// for the first rate.
const maxSamples = 61

// chartSpan is how far back the charts look.
const chartSpan = time.Hour

type sample struct {
	at        time.Time
	delivered map[string]uint64 // per namespace, since the page started
	behind    map[string]uint64 // per namespace, records behind the cursors
}

// Hooks returns next with its Turn hook also counting namespace ns's
// deliveries for the deliveries/s chart. Pass it to the namespace's worker
// (push.WithHooks).
func (p *Page) Hooks(ns string, next push.Hooks) push.Hooks {
	turn := next.Turn
	next.Turn = func(at time.Time, r push.SweepReport, took time.Duration, err error) {
		if r.Deliveries > 0 {
			p.mu.Lock()
			p.delivered[ns] += uint64(r.Deliveries)
			p.mu.Unlock()
		}
		if turn != nil {
			turn(at, r, took, err)
		}
	}
	return next
}

// Sample takes one sample at instant at: the deliveries counted by Hooks so
// far and each namespace's records behind (Store.Stats at at). Errors: the
// store's (no sample is kept).
func (p *Page) Sample(ctx context.Context, at time.Time) error {
	st, err := p.store.Stats(ctx, at)
	if err != nil {
		return err
	}
	s := sample{at: at, behind: map[string]uint64{}}
	for ns, c := range st.Namespaces {
		s.behind[ns] = c.Behind
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.delivered = maps.Clone(p.delivered)
	p.samples = append(p.samples, s)[max(len(p.samples)+1-maxSamples, 0):]
	return nil
}

// RunSampler calls Sample at once and then every minute on the page's
// clock, until ctx ends: an hour's chart has 60 points, for one Stats a
// minute. A failed sample is logged and skipped.
func (p *Page) RunSampler(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := p.Sample(ctx, p.now()); err != nil && ctx.Err() == nil {
			p.log.Warn("herald page: sample", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type point struct {
	at time.Time
	v  float64
}

// series returns namespace ns's deliveries/s (between successive samples)
// and records behind, over the samples held.
func (p *Page) series(ns string) (rate, lag []point) {
	p.mu.Lock()
	ss := slices.Clone(p.samples)
	p.mu.Unlock()
	for i, s := range ss {
		lag = append(lag, point{s.at, float64(s.behind[ns])})
		if i == 0 {
			continue
		}
		prev := ss[i-1]
		if d := s.at.Sub(prev.at).Seconds(); d > 0 && s.delivered[ns] >= prev.delivered[ns] {
			rate = append(rate, point{s.at, float64(s.delivered[ns]-prev.delivered[ns]) / d})
		}
	}
	return rate, lag
}

// chart is one small chart's data, for chartSVG.
type chart struct {
	Label  string // fixed text, never a stored value
	Points []point
}

// chartSVG draws c as an inline SVG line over the hour before its newest
// point. Only numbers and the fixed label go into it.
func chartSVG(c chart) template.HTML {
	const w, h, pad = 260.0, 64.0, 4.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		w, h+16, w, h+16, template.HTMLEscapeString(c.Label))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#f6f8fa" stroke="#d0d7de"/>`, w, h)
	if len(c.Points) == 0 {
		fmt.Fprintf(&b, `<text x="8" y="%.0f" font-size="11" fill="#57606a">no samples yet (taken each minute since the daemon started)</text>`, h/2+4)
		fmt.Fprintf(&b, `<text x="0" y="%.0f" font-size="11" fill="#24292f">%s</text></svg>`, h+13, template.HTMLEscapeString(c.Label))
		return template.HTML(b.String())
	}
	end := c.Points[len(c.Points)-1].at
	start := end.Add(-chartSpan)
	top := 0.0
	for _, pt := range c.Points {
		top = max(top, pt.v)
	}
	if top == 0 {
		top = 1
	}
	var pts []string
	for _, pt := range c.Points {
		if pt.at.Before(start) {
			continue
		}
		x := pad + (w-2*pad)*pt.at.Sub(start).Seconds()/chartSpan.Seconds()
		y := h - pad - (h-pad-16)*pt.v/top // 16 px at the top for the max label
		pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#0969da" stroke-width="1.5"/>`, strings.Join(pts, " "))
	last := c.Points[len(c.Points)-1].v
	fmt.Fprintf(&b, `<text x="%.0f" y="12" font-size="10" fill="#57606a" text-anchor="end">max %s</text>`, w-4, num(top))
	fmt.Fprintf(&b, `<text x="0" y="%.0f" font-size="11" fill="#24292f">%s: %s at the last sample</text></svg>`, h+13,
		template.HTMLEscapeString(c.Label), num(last))
	return template.HTML(b.String())
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

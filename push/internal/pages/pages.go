// Package pages lets a worker's turns that read one stream from one place
// share one journal Read (Journal says when a page may stand for a read).
package pages

import (
	"bytes"
	"container/list"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
)

// Journal is the journal as a worker's turns read it: turns that read one
// stream from one place share one Read. A sequenced record never changes,
// so a page stands for a turn's read, cut by the read's own limit and byte
// bound (journal.PageEnd), if:
//
//   - its read was sent after the turn's claim (readClaim.claimed): while
//     the lease holds, nothing at or above the cursor can be pruned, nor the
//     stream removed and started anew;
//   - a read that the page's end cuts, not its own bounds, is answered only
//     by a page shorter than its limit (the journal's end, or the page's
//     byte bound), and only for a turn whose claim knew of no record past
//     it (readClaim.head): the record after the page was numbered after
//     the claim, so the journal held the page and no more at an instant
//     after the claim.
//
// Each turn gets records of its own: a copy, or the page itself for the
// last. Memory: pagesPerStream pages a stream, pagesMaxBytes in all, none
// older than half the lease. Reads outside a turn go to the journal.
type Journal struct {
	journal.Journal
	maxAge time.Duration // half the lease: no turn claimed before now-maxAge reads

	mu      sync.Mutex
	streams map[string][]*page // per stream, oldest read first, at most pagesPerStream
	order   list.List          // *page, oldest read first
	bytes   int                // of the pages in order
}

const (
	// pagesPerStream bounds a stream's pages kept or in flight: its
	// registrations sit at a few cursors (the head, a retry's, a window's),
	// and a read looks through them all.
	pagesPerStream = 8
	// pagesMaxBytes (16 MiB) holds a full drain page of 64 KiB payloads, or
	// 20 records of 200 bytes for each of 4,000 streams.
	pagesMaxBytes = 16 << 20
)

// page is one read of the journal, shared by the turns it stands for.
type page struct {
	stream  string
	from    uint64
	limit   int
	sent    time.Time     // when the read was sent (monotonic)
	done    chan struct{} // closed when recs and err are set
	recs    []journal.Record
	err     error
	whole   bool          // done, and recs start at from and are gapless: serve may index them
	size    int           // bytes, once done and kept
	elem    *list.Element // in pages.order while kept
	dropped bool          // replaced or evicted: serves no new turn
	waiters int           // turns waiting for the read, that may still be served from it
	given   bool          // the page's own records were handed out: every later turn gets a copy
}

// readClaim is what a turn's context tells pages of the turn's claim.
type readClaim struct {
	claimed time.Time // after the claim's Due returned
	head    uint64    // the stream's head in the claim
}

type readClaimKey struct{}

// WithClaim returns ctx telling pages the turn's claim.
func WithClaim(ctx context.Context, claimed time.Time, head uint64) context.Context {
	return context.WithValue(ctx, readClaimKey{}, readClaim{claimed: claimed, head: head})
}

func New(j journal.Journal, lease time.Duration) *Journal {
	return &Journal{Journal: j, maxAge: lease / 2, streams: map[string][]*page{}}
}

// Read serves a turn's read from a page that stands for it, else reads and
// shares it.
func (p *Journal) Read(ctx context.Context, stream string, fromSeq uint64, limit, maxBytes int) ([]journal.Record, error) {
	rc, ok := ctx.Value(readClaimKey{}).(readClaim)
	if !ok || journal.ValidateRead(stream, fromSeq, limit, maxBytes) != nil {
		return p.Journal.Read(ctx, stream, fromSeq, limit, maxBytes)
	}
	p.mu.Lock()
	var wait *page // a read in flight that may cover this one
	ps := p.streams[stream]
	for i := len(ps) - 1; i >= 0; i-- { // the newest first
		pg := ps[i]
		if pg.sent.Before(rc.claimed) {
			continue
		}
		select {
		case <-pg.done:
			if recs, ok := pg.serve(fromSeq, limit, maxBytes, rc.head); ok {
				p.mu.Unlock()
				return recs, nil
			}
		default:
			if wait == nil && pg.from <= fromSeq && fromSeq-pg.from < uint64(pg.limit) {
				wait = pg
			}
		}
	}
	if wait != nil {
		wait.waiters++
		p.mu.Unlock()
		select {
		case <-wait.done:
		case <-ctx.Done():
			p.mu.Lock()
			wait.waiters--
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		p.mu.Lock()
		wait.waiters--
		if recs, ok := wait.serve(fromSeq, limit, maxBytes, rc.head); ok {
			p.mu.Unlock()
			return recs, nil
		}
	}
	pg := &page{stream: stream, from: fromSeq, limit: limit, sent: time.Now(), done: make(chan struct{})}
	p.add(pg)
	p.mu.Unlock()

	recs, err := p.Journal.Read(ctx, stream, fromSeq, limit, maxBytes)

	p.mu.Lock()
	pg.recs, pg.err = recs, err
	close(pg.done)
	p.keep(pg)
	out := recs
	if err == nil {
		out = pg.give(recs)
	}
	p.mu.Unlock()
	return out, err
}

// add puts a read just sent among its stream's pages, replacing one from
// the same place, dropping the oldest beyond pagesPerStream.
func (p *Journal) add(pg *page) {
	for _, old := range p.streams[pg.stream] {
		if old.from == pg.from {
			p.drop(old)
			break
		}
	}
	if ps := p.streams[pg.stream]; len(ps) >= pagesPerStream {
		p.drop(ps[0])
	}
	p.streams[pg.stream] = append(p.streams[pg.stream], pg)
}

// serve gives (give) the page's records for a read of limit records and
// maxBytes from fromSeq by a turn whose claim saw head, if it has them all:
// up to where the read's bounds stop it, or, when the page is short of its
// limit, to the page's end if head is within it.
func (pg *page) serve(fromSeq uint64, limit, maxBytes int, head uint64) ([]journal.Record, bool) {
	if !pg.whole {
		return nil, false
	}
	lo := pg.recs[0].Seq
	hi := lo + uint64(len(pg.recs)) - 1
	if fromSeq < lo || fromSeq > hi {
		return nil, false
	}
	recs := pg.recs[fromSeq-lo:]
	if n := journal.PageEnd(recs, limit, maxBytes); n < len(recs) || n == limit {
		return pg.give(recs[:n]), true
	}
	if len(pg.recs) < pg.limit && head <= hi {
		return pg.give(recs), true
	}
	return nil, false
}

// give hands recs, records of pg, to one turn: themselves if no other turn
// can be served from pg any more, else a copy.
func (pg *page) give(recs []journal.Record) []journal.Record {
	if pg.dropped && pg.waiters == 0 && !pg.given {
		pg.given = true
		return recs
	}
	return clonePage(recs)
}

// keep adds a done page to the budget unless it failed, was replaced, is too
// big or is not gapless from its from (serve indexes it); then drops pages
// over the budget or too old.
func (p *Journal) keep(pg *page) {
	pg.whole = pg.err == nil && len(pg.recs) > 0
	for i := 0; pg.whole && i < len(pg.recs); i++ {
		pg.whole = pg.recs[i].Seq == pg.from+uint64(i) && pg.recs[i].Stream == pg.stream
	}
	ok := !pg.dropped && pg.whole
	if ok {
		for _, r := range pg.recs {
			pg.size += recordBytes(r)
		}
		ok = pg.size <= pagesMaxBytes/4
	}
	if !ok {
		p.drop(pg)
		return
	}
	pg.elem = p.order.PushBack(pg)
	p.bytes += pg.size
	old := time.Now().Add(-p.maxAge)
	for e := p.order.Front(); e != nil && (p.bytes > pagesMaxBytes || e.Value.(*page).sent.Before(old)); e = p.order.Front() {
		p.drop(e.Value.(*page))
	}
}

// drop forgets a page: turns waiting on it still get its records.
func (p *Journal) drop(pg *page) {
	if pg.dropped {
		return
	}
	pg.dropped = true
	ps := p.streams[pg.stream]
	if i := slices.Index(ps, pg); i >= 0 {
		ps = slices.Delete(ps, i, i+1)
		if len(ps) == 0 {
			delete(p.streams, pg.stream)
		} else {
			p.streams[pg.stream] = ps
		}
	}
	if pg.elem != nil {
		p.order.Remove(pg.elem)
		p.bytes -= pg.size
		pg.elem = nil
	}
}

// recordBytes is about what a kept record costs in memory.
func recordBytes(r journal.Record) int {
	return 160 + len(r.Stream) + len(r.ID) + len(r.Kind) + len(r.ContentType) + len(r.Payload) +
		len(r.Traceparent) + len(r.Tracestate)
}

// clonePage copies records and their payloads.
func clonePage(recs []journal.Record) []journal.Record {
	out := make([]journal.Record, len(recs))
	for i, r := range recs {
		r.Payload = bytes.Clone(r.Payload)
		out[i] = r
	}
	return out
}

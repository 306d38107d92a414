package push

import (
	"bytes"
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/heraldpush/herald/journal"
)

// pages is the journal as a worker's turns read it: turns that read the
// same stream from the same place share one Read of the journal. At
// fan-out (one stream, many registrations at one cursor) that is one read
// per claim where every turn used to make its own.
//
// A sequenced record never changes, so the only questions are whether a
// page read earlier may stand for the journal now, and for how long:
//
//   - A page stands for a turn only if its read was sent after the turn's
//     claim was taken (readClaim.claimed). While the claim's lease holds,
//     the registration's cursor c is where Due found it, so nothing at or
//     above c can be pruned (the low-water mark rises only past records
//     every registration acknowledged), and its stream cannot be removed
//     and started anew; the page is what a read of the turn's own, made at
//     the moment the shared read was, would have returned. A turn that
//     lost its lease meanwhile could deliver no more from a shared page
//     than from a read of its own made at that moment. A page read before
//     the claim is never used for it: the stream might since have been
//     pruned away and started anew under the same name.
//   - A page shorter than its read's limit reached the journal's end when
//     read; it stands for a turn that wants more only if the turn's claim
//     knew of no record past its end (readClaim.head). Otherwise the turn
//     reads for itself, and sees what was appended since.
//   - Records are not filtered here (a registration's kinds are applied by
//     the turn), and each turn gets its own copy of the records and their
//     payloads, as a read of its own would give.
//
// Memory: one page per stream (the newest read), at most pagesMaxBytes in
// all, the oldest dropped first; a page older than half the lease can serve
// no turn (a turn that late starts no record) and is dropped too, when the
// next page is kept (so an idle worker may hold its last pages, at most
// pagesMaxBytes, until it reads again). A page
// above a quarter of the budget is not kept. Reads outside a turn (no
// readClaim in the context) go to the journal.
type pages struct {
	journal.Journal
	maxAge time.Duration // half the lease: no turn claimed before now-maxAge reads

	mu      sync.Mutex
	streams map[string]*page
	order   list.List // *page, oldest read first
	bytes   int       // of the pages in order
}

// pagesMaxBytes bounds a worker's shared pages: 16 MiB holds a full drain
// page (256 records) of 64 KiB payloads, or one page of 20 records for each
// of 4,000 streams at 200 bytes a record.
const pagesMaxBytes = 16 << 20

// page is one read of the journal, shared by the turns it stands for.
type page struct {
	stream  string
	from    uint64
	limit   int
	sent    time.Time     // when the read was sent (monotonic)
	done    chan struct{} // closed when recs and err are set
	recs    []journal.Record
	err     error
	size    int           // bytes, once done and kept
	elem    *list.Element // in pages.order while kept
	dropped bool          // replaced or evicted: not to be kept when done
}

// readClaim is what a turn's context tells pages of the turn's claim.
type readClaim struct {
	claimed time.Time // after the claim's Due returned
	head    uint64    // the stream's head in the claim
}

type readClaimKey struct{}

// withReadClaim returns ctx telling pages the turn's claim.
func withReadClaim(ctx context.Context, claimed time.Time, head uint64) context.Context {
	return context.WithValue(ctx, readClaimKey{}, readClaim{claimed: claimed, head: head})
}

func newPages(j journal.Journal, lease time.Duration) *pages {
	return &pages{Journal: j, maxAge: lease / 2, streams: map[string]*page{}}
}

// Read implements journal.Journal: a turn's read is served from a page
// that stands for it (see pages), else read and shared.
func (p *pages) Read(ctx context.Context, stream string, fromSeq uint64, limit int) ([]journal.Record, error) {
	rc, ok := ctx.Value(readClaimKey{}).(readClaim)
	if !ok || journal.ValidateRead(stream, fromSeq, limit) != nil {
		return p.Journal.Read(ctx, stream, fromSeq, limit)
	}
	p.mu.Lock()
	if pg := p.streams[stream]; pg != nil && !pg.sent.Before(rc.claimed) {
		select {
		case <-pg.done:
			if recs, ok := pg.serve(fromSeq, limit, rc.head); ok {
				p.mu.Unlock()
				return recs, nil
			}
		default:
			if pg.from <= fromSeq && fromSeq-pg.from < uint64(pg.limit) {
				// In flight, and it may cover this read: wait for it.
				p.mu.Unlock()
				select {
				case <-pg.done:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				p.mu.Lock()
				if recs, ok := pg.serve(fromSeq, limit, rc.head); ok {
					p.mu.Unlock()
					return recs, nil
				}
			}
		}
	}
	pg := &page{stream: stream, from: fromSeq, limit: limit, sent: time.Now(), done: make(chan struct{})}
	if old := p.streams[stream]; old != nil {
		p.drop(old)
	}
	p.streams[stream] = pg
	p.mu.Unlock()

	recs, err := p.Journal.Read(ctx, stream, fromSeq, limit)

	p.mu.Lock()
	pg.recs, pg.err = recs, err
	close(pg.done)
	p.keep(pg)
	out := recs
	if err == nil {
		out = clonePage(recs) // the kept page is shared; the caller's copy is its own
	}
	p.mu.Unlock()
	return out, err
}

// serve returns the records of a done page for a read of limit records
// from fromSeq by a turn whose claim saw the stream's head at head, if the
// page has them all: every record up to fromSeq+limit-1, or, when the
// page reached the journal's end, every record up to head.
func (pg *page) serve(fromSeq uint64, limit int, head uint64) ([]journal.Record, bool) {
	if pg.err != nil || len(pg.recs) == 0 {
		return nil, false
	}
	lo := pg.recs[0].Seq
	hi := lo + uint64(len(pg.recs)) - 1
	if fromSeq < lo || fromSeq > hi {
		return nil, false
	}
	i := int(fromSeq - lo)
	if n := len(pg.recs) - i; n >= limit {
		return clonePage(pg.recs[i : i+limit]), true
	}
	if len(pg.recs) < pg.limit && head <= hi {
		return clonePage(pg.recs[i:]), true
	}
	return nil, false
}

// keep adds a done page to the budget, unless it failed, was replaced
// meanwhile, is too big or is not what a journal's read looks like (a
// page must start at its from and be gapless, so that serve can index
// it); then drops pages over the budget or too old to serve.
func (p *pages) keep(pg *page) {
	ok := !pg.dropped && pg.err == nil && len(pg.recs) > 0
	for i := 0; ok && i < len(pg.recs); i++ {
		ok = pg.recs[i].Seq == pg.from+uint64(i) && pg.recs[i].Stream == pg.stream
	}
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
func (p *pages) drop(pg *page) {
	pg.dropped = true
	if p.streams[pg.stream] == pg {
		delete(p.streams, pg.stream)
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

package push

import (
	"context"
	"fmt"
	"sync"
)

// AdvanceBatcher is a Store that can save many turns' progress in one
// round trip and one commit. A worker on such a store coalesces the
// Advance calls of its concurrent turns (group commit: while one batch is
// being saved the next gathers; no timer, so a lone save waits for
// nothing); each turn still waits for its own save's result. Other stores
// get one Advance a save.
type AdvanceBatcher interface {
	// AdvanceBatch applies Advance to every save, as one atomic step: errs
	// has one entry per save, in order, each what Advance would have
	// returned for that save alone (nil if it applied, else ErrLeaseLost,
	// ErrNotFound or ErrInvalid, and nothing of that save changed). err is
	// the database's failure: then nothing applied and errs is nil.
	AdvanceBatch(ctx context.Context, saves []CursorSave) (errs []error, err error)
}

// CursorSave is one Advance of a batch: the claim and the cursor reached.
type CursorSave struct {
	Claim   Claim
	NextSeq uint64
}

// maxAdvanceBatch bounds one AdvanceBatch: more saves waiting go in the
// next. A worker has at most MaxInFlight turns saving at once, which has
// no upper bound; 1,024 keeps one statement's arrays, and the rows it
// locks, small.
const maxAdvanceBatch = 1024

// cursorStore is the store as a worker's turns use it: Advance goes
// through the group commit when the store is an AdvanceBatcher.
type cursorStore struct {
	Store
	batcher AdvanceBatcher

	mu     sync.Mutex
	queue  []*pendingSave
	saving bool // a goroutine is saving batches of queue

	queued func(n int) // tests: told the queue's length after each save joins it
}

type pendingSave struct {
	ctx  context.Context
	save CursorSave
	done chan error // buffered: the saver never waits
}

// withGroupCommit returns s with Advance coalesced, if s can batch it.
func withGroupCommit(s Store) Store {
	if b, ok := s.(AdvanceBatcher); ok {
		return &cursorStore{Store: s, batcher: b}
	}
	return s
}

// Advance queues the save and waits for its result; the first save
// queued while none is being saved starts the saver.
func (c *cursorStore) Advance(ctx context.Context, claim Claim, nextSeq uint64) error {
	p := &pendingSave{ctx: ctx, save: CursorSave{Claim: claim, NextSeq: nextSeq}, done: make(chan error, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if c.queued != nil {
		c.queued(len(c.queue))
	}
	if !c.saving {
		c.saving = true
		go c.saveAll()
	}
	c.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err() // the save may still apply, as a cancelled Advance may
	}
}

// saveAll saves what is queued, one batch at a time, until nothing is.
func (c *cursorStore) saveAll() {
	for {
		c.mu.Lock()
		batch := c.queue
		if len(batch) > maxAdvanceBatch {
			batch = batch[:maxAdvanceBatch:maxAdvanceBatch]
			c.queue = append([]*pendingSave(nil), c.queue[maxAdvanceBatch:]...)
		} else {
			c.queue = nil
		}
		if len(batch) == 0 {
			c.saving = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.save(batch)
	}
}

// save saves one batch: alone, as a plain Advance.
func (c *cursorStore) save(batch []*pendingSave) {
	ctx := context.WithoutCancel(batch[0].ctx)
	if len(batch) == 1 {
		p := batch[0]
		p.done <- c.Store.Advance(ctx, p.save.Claim, p.save.NextSeq)
		return
	}
	saves := make([]CursorSave, len(batch))
	for i, p := range batch {
		saves[i] = p.save
	}
	errs, err := c.batcher.AdvanceBatch(ctx, saves)
	if err == nil && len(errs) != len(saves) {
		err = fmt.Errorf("push: the store's AdvanceBatch answered %d results for %d saves", len(errs), len(saves))
	}
	for i, p := range batch {
		if err != nil {
			p.done <- err
		} else {
			p.done <- errs[i]
		}
	}
}

// Package groupcommit saves a worker's concurrent cursor saves
// (Store.Advance) in one AdvanceBatch round trip when the store offers it:
// while one batch is saved the next gathers; no timer.
package groupcommit

import (
	"context"
	"fmt"
	"sync"

	"github.com/heraldpush/herald/store"
)

// maxAdvanceBatch bounds one AdvanceBatch (MaxInFlight has no bound), so
// that one statement's arrays, and the rows it locks, stay small.
const maxAdvanceBatch = 1024

// cursorStore is an AdvanceBatcher with Advance going through group commit.
type cursorStore struct {
	store.Store
	batcher store.AdvanceBatcher

	mu     sync.Mutex
	queue  []*pendingSave
	saving bool // a goroutine is saving batches of queue

	queued func(n int) // tests: told the queue's length after each save joins it
}

type pendingSave struct {
	ctx  context.Context
	save store.CursorSave
	done chan error // buffered: the saver never waits
}

// Wrap returns s with Advance coalesced, if s can batch it.
func Wrap(s store.Store) store.Store {
	if b, ok := s.(store.AdvanceBatcher); ok {
		return &cursorStore{Store: s, batcher: b}
	}
	return s
}

// Advance queues the save, starting the saver if none runs, and waits.
func (c *cursorStore) Advance(ctx context.Context, claim store.Claim, nextSeq uint64) error {
	p := &pendingSave{ctx: ctx, save: store.CursorSave{Claim: claim, NextSeq: nextSeq}, done: make(chan error, 1)}
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
	saves := make([]store.CursorSave, len(batch))
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

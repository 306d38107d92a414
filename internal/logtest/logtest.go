// Package logtest holds a log that a test reads while the code it tests
// may still write to it. Only tests import it.
package logtest

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer is a log written by a logger on other goroutines and read by the
// test. The zero value is an empty log.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String is what has been written so far.
func (w *Buffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Logger is a text logger that writes to w.
func (w *Buffer) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

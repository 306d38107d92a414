package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/sqlite"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "herald-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	path := filepath.Join(dir, "herald.db")
	s, err := sqlite.Open(ctx, path) // created and migrated
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	recs, _ := s.Append(ctx, "task/42",
		journal.Entry{ID: "urn:uuid:1", Kind: "statusUpdate", Payload: []byte(`{"state":"working"}`)},
		journal.Entry{ID: "urn:uuid:2", Kind: "statusUpdate", Payload: []byte(`{"state":"completed"}`), Final: true})
	for _, r := range recs {
		fmt.Println(r.Stream, r.Seq, r.ID, r.Final)
	}
	_, err = s.Append(ctx, "task/42", journal.Entry{ID: "urn:uuid:3", Kind: "statusUpdate", Payload: []byte(`{}`)})
	fmt.Println("sealed:", errors.Is(err, journal.ErrSealed))

	_, _ = s.Register(ctx, store.Registration{Stream: "task/42", ID: "push-1", Namespace: "a2a", URL: "https://client.example/hook"})
	at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
	batch, _ := s.Due(ctx, store.DueQuery{At: at, Limit: 10, Namespace: "a2a", Owner: "example", LeaseUntil: at.Add(time.Minute)})
	for _, st := range batch.Registrations {
		fmt.Println("due:", st.Key(), "records", st.NextSeq, "to", st.Head)
	}

	schema, _ := sqlite.MigrationStatus(ctx, path)
	fmt.Println("schema version", schema.Current, "of", schema.Latest)
	// Output:
	// task/42 1 urn:uuid:1 false
	// task/42 2 urn:uuid:2 true
	// sealed: true
	// due: {task/42 push-1} records 1 to 2
	// schema version 1 of 1
}

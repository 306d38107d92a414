package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/pgtest"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/postgres"
)

// TestTurnsStayInsideTheirLease: a daemon claims more registrations than
// it serves at once, all under one lease, so a turn's budget counts from
// the claim, and a turn that would start late releases its claim rather
// than send after another daemon may have claimed the registration. Two
// daemons, twenty registrations of one record each, receivers that take
// 600 ms to answer, --max-in-flight 2 and --lease 2s: each record is
// acknowledged exactly once, and no turn is fenced out ("lease lost").
func TestTurnsStayInsideTheirLease(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDatabase(t)
	s := newScenario(t, db)
	ledger := NewLedger()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, seq, _ := parseRecordID(r.Header.Get("webhook-id"))
		ledger.Attempt(r.URL.Path, seq)
		// A slow receiver: the fault injected, not a synchronisation.
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		ledger.Ack(r.URL.Path, seq)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	s.cli.ok("migrate", "up")
	st, err := postgres.Open(ctx, db, postgres.WithKeyring(s.keyring))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const n = 20
	var streams []string
	for i := 0; i < n; i++ {
		cfg, err := webhook.Config{Secrets: []string{s.webhookSecret()}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		stream := fmt.Sprintf("slow/%02d", i)
		streams = append(streams, stream)
		if _, err := st.Register(ctx, push.Registration{Stream: stream, ID: "r", Namespace: webhook.Namespace,
			URL: srv.URL + "/" + stream, Config: cfg}); err != nil {
			t.Fatal(err)
		}
	}
	var daemons []*proc
	for i := 0; i < 2; i++ {
		d := s.cli.start(fmt.Sprintf("daemon %d", i), filepath.Join(s.dir, fmt.Sprintf("daemon-%d.log", i)),
			"-v", "run", "--namespaces", "webhook", "--every", "200ms", "--metrics-addr", "127.0.0.1:0", "--admin-addr", "",
			"--allow-http", "--allow-private-network", "--max-in-flight", "2", "--lease", "2s", "--timeout", "5s")
		if _, err := d.out.waitLine(ctx, time.Minute, "herald: running"); err != nil {
			t.Fatal(err)
		}
		daemons = append(daemons, d)
	}
	if _, err := s.appendRounds(ctx, streams, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := ledger.WaitDistinct(ctx, time.Minute, n); err != nil {
		t.Fatal(err)
	}
	fenced := 0
	for _, d := range daemons {
		if code, err := d.stop(time.Minute); err != nil || code != 0 {
			t.Fatalf("daemon: exit %d, %v", code, err)
		}
		fenced += d.out.count("lease lost")
	}
	total, distinct, _ := ledger.Counts()
	var twice []string
	for _, stream := range streams {
		if acks := ledger.Acks("/" + stream); len(acks) > 1 {
			twice = append(twice, fmt.Sprintf("%s %v", stream, acks))
		}
	}
	if total != distinct || fenced > 0 {
		t.Errorf("with no crash, %d records were acknowledged %d times (%s), and %d turns were fenced out: "+
			"turns started after the lease their sweep claimed them with had expired, while another daemon served them",
			distinct, total, strings.Join(twice, "; "), fenced)
	}
}

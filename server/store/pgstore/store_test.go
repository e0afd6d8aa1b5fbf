package pgstore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var policy = store.Policy{
	DefaultLeaseTTL: time.Minute,
	CompletedTTL:    time.Hour,
	RejectedTTL:     time.Hour,
	ReleasedTTL:     10 * time.Minute,
}

// newStore opens a migrated store on a fresh schema.
func newStore(t testing.TB) *pgstore.Store {
	t.Helper()
	return migrated(t, openStore(t, pgtest.URL(t)))
}

// newStoreWith opens a migrated store with options on a fresh schema.
func newStoreWith(t testing.TB, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.URL(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return migrated(t, s)
}

func openStore(t testing.TB, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func migrated(t testing.TB, s *pgstore.Store) *pgstore.Store {
	t.Helper()
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// newTracedStore is newStore with a query tracer on every connection.
func newTracedStore(t testing.TB, tracer pgx.QueryTracer) *pgstore.Store {
	t.Helper()
	s, err := pgstore.OpenTraced(context.Background(), pgtest.URL(t), pgstore.Options{}, tracer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return migrated(t, s)
}

func claimParams(key string) store.ClaimParams {
	return store.ClaimParams{Consumer: "billing", Key: key, Digest: []byte("digest-" + key), Owner: "worker-1", Policy: policy}
}

// statementLog is a pgx tracer that records the SQL of every statement.
type statementLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sqls = append(l.sqls, data.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements logged since the last call.
func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	sqls := l.sqls
	l.sqls = nil
	return sqls
}

func TestMigrateIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, pgtest.URL(t))
	all, err := migrations.Load(migrations.Postgres, migrations.PostgresOnly)
	if err != nil {
		t.Fatal(err)
	}

	pending, err := s.PendingMigrations(ctx)
	if err != nil || len(pending) != len(all) {
		t.Fatalf("PendingMigrations on an empty schema = %d migrations, %v; want %d", len(pending), err, len(all))
	}
	applied, err := s.Migrate(ctx)
	if err != nil || len(applied) != len(all) {
		t.Fatalf("first Migrate applied %d, %v; want %d", len(applied), err, len(all))
	}
	applied, err = s.Migrate(ctx)
	if err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate applied %d, %v; want 0", len(applied), err)
	}
	pending, err = s.PendingMigrations(ctx)
	if err != nil || len(pending) != 0 {
		t.Fatalf("PendingMigrations after Migrate = %d, %v; want 0", len(pending), err)
	}
}

// Servers starting together all migrate at once; none may fail.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		s := openStore(t, url)
		wg.Go(func() {
			_, err := s.Migrate(context.Background())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	if pending, err := openStore(t, url).PendingMigrations(context.Background()); err != nil || len(pending) != 0 {
		t.Errorf("PendingMigrations after concurrent Migrate = %d, %v; want 0", len(pending), err)
	}
}

func TestFreshClaimIsOneStatement(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	log.take()

	res, err := s.Claim(ctx, claimParams("fresh"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if sqls := log.take(); len(sqls) != 1 || !strings.HasPrefix(sqls[0], "INSERT") {
		t.Errorf("a fresh claim sent %d statements, want one INSERT: %q", len(sqls), sqls)
	}
	if res.Outcome != store.Acquired || res.Record.FencingToken != 1 || res.Record.Attempts != 1 || res.Record.State != store.Pending {
		t.Errorf("fresh claim = %v %+v", res.Outcome, res.Record)
	}

	// The times are the database's, and the offsets the ones Apply chose.
	r := res.Record
	if d := time.Since(r.CreatedAt); d < -5*time.Second || d > 5*time.Second {
		t.Errorf("CreatedAt %v is %v away from this clock", r.CreatedAt, d)
	}
	if !r.UpdatedAt.Equal(r.CreatedAt) ||
		r.LeaseExpiresAt.Sub(r.CreatedAt) != policy.DefaultLeaseTTL ||
		r.ExpiresAt.Sub(r.LeaseExpiresAt) != policy.ReleasedTTL {
		t.Errorf("fresh claim times: created %v updated %v lease %v expires %v", r.CreatedAt, r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt)
	}
	if r.CreatedAt.Location() != time.UTC || r.CreatedAt.Nanosecond()%1000 != 0 {
		t.Errorf("CreatedAt %v is not normalised with store.Now", r.CreatedAt)
	}

	// A claim of a taken key falls back to reading it; an in-progress
	// answer writes nothing.
	res, err = s.Claim(ctx, claimParams("fresh"))
	if err != nil || res.Outcome != store.InProgress || res.RetryAfter <= 0 || res.RetryAfter > policy.DefaultLeaseTTL {
		t.Fatalf("second claim = %v, retry after %v, %v; want InProgress", res.Outcome, res.RetryAfter, err)
	}
	if sqls := log.take(); len(sqls) != 2 || !strings.HasPrefix(sqls[0], "INSERT") || !strings.HasPrefix(sqls[1], "SELECT") {
		t.Errorf("a claim of a taken key sent %q, want the insert, then one read", sqls)
	}
}

// Every field survives the database: what a call returns is what Lookup
// reads back.
func TestRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	check := func(name string, got store.Record, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		looked, err := s.Lookup(ctx, got.Consumer, got.Key)
		if err != nil || !reflect.DeepEqual(looked, got) {
			t.Errorf("%s: Lookup = %+v, %v\nreturned %+v", name, looked, err, got)
		}
	}

	claimed, err := s.Claim(ctx, claimParams("complete"))
	check("claim", claimed.Record, err)
	rec, err := s.ExtendLease(ctx, store.ExtendLeaseParams{Consumer: "billing", Key: "complete", FencingToken: 1, LeaseTTL: time.Hour, Policy: policy})
	check("extend", rec, err)
	rec, err = s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "complete", FencingToken: 1, Result: []byte("ok"), Policy: policy})
	check("complete", rec, err)
	if rec.State != store.Completed || string(rec.Result) != "ok" || rec.Rejection != nil {
		t.Errorf("completed record %+v", rec)
	}

	for _, rej := range []store.Rejection{
		{Reason: "INSUFFICIENT_FUNDS", Message: "balance too low", Detail: []byte{0, 1, 2}},
		{Reason: "BUSY", Retryable: true}, // no message, no detail
	} {
		key := "reject-" + rej.Reason
		claimed, err := s.Claim(ctx, claimParams(key))
		check("claim", claimed.Record, err)
		rec, err = s.Reject(ctx, store.RejectParams{Consumer: "billing", Key: key, FencingToken: 1, Rejection: rej, Policy: policy})
		check("reject "+rej.Reason, rec, err)
		if rec.Rejection == nil || !reflect.DeepEqual(*rec.Rejection, rej) {
			t.Errorf("stored rejection %+v, want %+v", rec.Rejection, rej)
		}
	}
}

// Refusals are store.Apply's errors, unwrapped by any database layer.
func TestRefusalsAreApplysErrors(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Claim(ctx, claimParams("k")); err != nil {
		t.Fatal(err)
	}

	_, err := s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "k", FencingToken: 2, Policy: policy})
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Err != store.ErrLeaseLost || conflict.Record.FencingToken != 1 {
		t.Errorf("Complete with a stale token: %v; want a ConflictError with ErrLeaseLost", err)
	}
	other := claimParams("k")
	other.Digest = []byte("other")
	if _, err := s.Claim(ctx, other); !errors.As(err, &conflict) || conflict.Err != store.ErrDigestMismatch {
		t.Errorf("Claim with another digest: %v; want a ConflictError with ErrDigestMismatch", err)
	}
	if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "absent", FencingToken: 1, Policy: policy}); err != store.ErrLeaseLost {
		t.Errorf("Complete of an absent key: %v; want ErrLeaseLost", err)
	}
	if _, err := s.Lookup(ctx, "billing", "absent"); err != store.ErrNotFound {
		t.Errorf("Lookup of an absent key: %v; want ErrNotFound", err)
	}
}

func TestDeleteExpiredHonoursLimit(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	short := store.Policy{DefaultLeaseTTL: time.Millisecond} // expires with its lease
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		p := claimParams(key)
		p.Policy = short
		if _, err := s.Claim(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, claimParams("live")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)

	for _, want := range []int{3, 2, 0} {
		if n, err := s.DeleteExpired(ctx, 3); err != nil || n != want {
			t.Fatalf("DeleteExpired(3) = %d, %v; want %d", n, err, want)
		}
	}
	if _, err := s.Lookup(ctx, "billing", "live"); err != nil {
		t.Errorf("the live record is gone: %v", err)
	}
}

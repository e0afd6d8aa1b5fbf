package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// adminClients talk to one dedupd.
type adminClients struct {
	dedup dedupv1.DedupServiceClient
	admin dedupv1.AdminServiceClient
}

func dialBoth(t testing.TB, p *process) adminClients {
	conn := p.dial(t)
	return adminClients{dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn)}
}

// finish claims and completes key with a digest and returns the record.
func (c adminClients) finish(t *testing.T, consumer, key string) *dedupv1.Record {
	t.Helper()
	ctx := context.Background()
	got, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: []byte("d")})
	if err != nil {
		t.Fatalf("Claim(%s): %v", key, err)
	}
	if got.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
		t.Fatalf("Claim(%s) = %v, want ACQUIRED", key, got)
	}
	done, err := c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key,
		FencingToken: got.GetFencingToken(), Result: []byte("ok")})
	if err != nil {
		t.Fatalf("Complete(%s): %v", key, err)
	}
	return done.GetRecord()
}

// finishAll claims and completes keys (result "ok") in two batch calls: as
// finish key by key does, in two round trips instead of two per key.
func (c adminClients) finishAll(t *testing.T, consumer string, keys []string) {
	t.Helper()
	ctx := context.Background()
	var claims []*dedupv1.ClaimBatchItem
	for _, key := range keys {
		claims = append(claims, &dedupv1.ClaimBatchItem{Key: key, Digest: []byte("d")})
	}
	claimed, err := c.dedup.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: consumer, Items: claims})
	if err != nil {
		t.Fatalf("ClaimBatch: %v", err)
	}
	var finishes []*dedupv1.FinishBatchItem
	for i, r := range claimed.GetResults() {
		if r.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
			t.Fatalf("claim of %s = %v, want ACQUIRED", keys[i], r)
		}
		finishes = append(finishes, &dedupv1.FinishBatchItem{Key: keys[i], FencingToken: r.GetClaim().GetFencingToken(),
			Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("ok")}})
	}
	done, err := c.dedup.FinishBatch(ctx, &dedupv1.FinishBatchRequest{Consumer: consumer, Items: finishes})
	if err != nil {
		t.Fatalf("FinishBatch: %v", err)
	}
	for i, r := range done.GetResults() {
		if r.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED {
			t.Fatalf("completion of %s = %v, want COMPLETED", keys[i], r)
		}
	}
}

func keptFor(r *dedupv1.Record) time.Duration {
	return r.GetExpiresAt().AsTime().Sub(r.GetUpdatedAt().AsTime())
}

// TestPerConsumerPolicyThroughTheBinary: a policy set through AdminService
// governs the consumer's next calls; the expiry of a record comes from the
// policy in force when it finished.
func TestPerConsumerPolicyThroughTheBinary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		// A long cache bound: a change through this server must still apply
		// to its next call.
		srv := startDedupd(t, append(flags, "--policy-cache-ttl", "1h", "--completed-ttl", "24h")...)
		c := dialBoth(t, srv)
		if got := keptFor(c.finish(t, "inventory", "before")); got != 24*time.Hour {
			t.Fatalf("default policy kept a record %s, want 24h", got)
		}
		set, err := c.admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: "inventory",
			CompletedTtl: durationpb.New(72 * time.Hour), MaxLeaseTtl: durationpb.New(2 * time.Hour),
			MaxResultBytes: 8, RequireDigest: true}})
		if err != nil {
			t.Fatal(err)
		}
		if set.GetStoredRecords() != 1 || set.GetEffective().GetDefaultLeaseTtl().AsDuration() != 30*time.Second {
			t.Fatalf("SetPolicy = %v, want 1 stored record and the default lease in effect", set)
		}

		_, err = c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "no-digest"})
		wantField(t, err, "digest")
		claim, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k", Digest: []byte("d"),
			LeaseTtl: durationpb.New(90 * time.Minute)})
		if err != nil {
			t.Fatalf("claim with a 90m lease under a 2h maximum: %v", err)
		}
		_, err = c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "payments", Key: "k", LeaseTtl: durationpb.New(90 * time.Minute)})
		wantField(t, err, "lease_ttl")
		_, err = c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "inventory", Key: "k",
			FencingToken: claim.GetFencingToken(), Result: []byte("123456789")})
		wantField(t, err, "result")
		done, err := c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "inventory", Key: "k",
			FencingToken: claim.GetFencingToken(), Result: []byte("12345678")})
		if err != nil {
			t.Fatal(err)
		}
		if got := keptFor(done.GetRecord()); got != 72*time.Hour {
			t.Fatalf("completed under the policy: kept %s, want 72h", got)
		}

		// Shortening warns, and applies to what finishes from now on only.
		shorter, err := c.admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: "inventory",
			CompletedTtl: durationpb.New(time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(shorter.GetWarnings(), "\n"), "completed_ttl shrinks from 72h to 1h") {
			t.Fatalf("warnings = %q, want the shrink warned about", shorter.GetWarnings())
		}
		if got := keptFor(c.finish(t, "inventory", "after")); got != time.Hour {
			t.Fatalf("completed after shortening: kept %s, want 1h", got)
		}
		old, err := c.dedup.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "inventory", Key: "k"})
		if err != nil || !old.GetRecord().GetExpiresAt().AsTime().Equal(done.GetRecord().GetExpiresAt().AsTime()) {
			t.Fatalf("stored record = %v, %v; want its 72h expiry kept", old, err)
		}
	})
}

// wantField asserts INVALID_FIELD on field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	st := wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
	if !strings.HasPrefix(st.Message(), field+":") {
		t.Fatalf("error %q does not name %s", st.Message(), field)
	}
}

// TestPolicyChangeReachesAnotherReplica: two servers on one database; a
// change through one applies to the other's next call once its cache bound
// (here zero) has passed.
func TestPolicyChangeReachesAnotherReplica(t *testing.T) {
	flags := backends[1].prepare(t) // postgres: the embedded store allows one server
	a := dialBoth(t, startDedupd(t, flags...))
	b := dialBoth(t, startDedupd(t, append(flags, "--policy-cache-ttl", "0")...))
	ctx := context.Background()
	if _, err := b.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: "inventory", RequireDigest: true}}); err != nil {
		t.Fatal(err)
	}
	_, err := b.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k2"})
	wantField(t, err, "digest")
	if _, err := a.admin.DeletePolicy(ctx, &dedupv1.DeletePolicyRequest{Consumer: "inventory"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k2"}); err != nil {
		t.Fatalf("after DeletePolicy on the other replica: %v", err)
	}
}

func TestListDeleteAndStatsThroughTheBinary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		c := dialBoth(t, startDedupd(t, flags...))
		var want []string
		for i := range 25 {
			key := fmt.Sprintf("sku-%02d", i)
			c.finish(t, "inventory", key)
			want = append(want, key)
		}
		c.finish(t, "payments", "sku-00")
		if _, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "payments", Key: "busy"}); err != nil {
			t.Fatal(err)
		}

		var got []string
		req := &dedupv1.ListRecordsRequest{Consumer: "inventory", PageSize: 10}
		for pages := 1; ; pages++ {
			resp, err := c.dedup.ListRecords(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.GetRecords() {
				got = append(got, r.GetKey())
			}
			if resp.GetNextPageToken() == "" {
				if pages != 3 {
					t.Fatalf("%d pages, want 3", pages)
				}
				break
			}
			req.PageToken = resp.GetNextPageToken()
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listed %v, want %v", got, want)
		}

		deleted, err := c.admin.DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: "inventory", Key: "sku-07"})
		if err != nil || deleted.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED {
			t.Fatalf("DeleteRecord = %v, %v", deleted, err)
		}
		c.finish(t, "inventory", "sku-07") // runs again: finish asserts ACQUIRED

		stats, err := c.admin.Stats(ctx, &dedupv1.StatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		s := stats.GetConsumers()
		if len(s) != 2 || s[0].GetConsumer() != "inventory" || s[0].GetCompleted() != 25 || s[0].GetPending() != 0 ||
			s[1].GetConsumer() != "payments" || s[1].GetCompleted() != 1 || s[1].GetPending() != 1 || s[1].GetOldestPendingAt() == nil {
			t.Fatalf("stats = %v, want inventory 25 completed, payments 1 completed 1 pending", s)
		}
	})
}

// purgeCounts reads a purge stream to its end.
func purgeCounts(t *testing.T, stream grpc.ServerStreamingClient[dedupv1.PurgeResponse]) []int64 {
	t.Helper()
	var counts []int64
	for {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("purge stream after %v: %v", counts, err)
		}
		counts = append(counts, msg.GetDeleted())
		if msg.GetDone() {
			return counts
		}
	}
}

func TestPurgeThroughTheBinary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		// Every call logged: the test waits for the purges' log lines.
		srv := startDedupd(t, slices.Concat(flags, []string{"--log-all-calls"})...)
		c := dialBoth(t, srv)
		// Enough batches that the cancel arrives long before the end; the
		// assertions hold either way, the log says how much was left.
		const total = 200
		var keys []string
		for i := range total {
			keys = append(keys, fmt.Sprintf("sku-%02d", i))
		}
		c.finishAll(t, "inventory", keys)
		c.finish(t, "payments", "p-1")

		dry, err := c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inventory", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if counts := purgeCounts(t, dry); !slices.Equal(counts, []int64{total}) {
			t.Fatalf("dry run = %v, want [%d]", counts, total)
		}

		// Cancel after the first batch: what is left must be whole batches
		// short of the total, and exactly as it was.
		const batch = 2
		cctx, cancel := context.WithCancel(ctx)
		stream, err := c.admin.Purge(cctx, &dedupv1.PurgeRequest{Consumer: "inventory", BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		if first, err := stream.Recv(); err != nil || first.GetDeleted() != batch {
			t.Fatalf("first message = %v, %v; want %d deleted", first, err, batch)
		}
		cancel()
		// The server may finish the batch in flight after the cancel; the
		// call's log line says when it has stopped.
		for deadline := time.Now().Add(30 * time.Second); purgesFinished(srv) < 2; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the cancelled purge never finished; logs:\n%s", srv.Logs)
			}
		}
		left := listKeys(t, c, "inventory")
		if (total-len(left))%batch != 0 {
			t.Fatalf("%d of %d records left after a cancelled purge in batches of %d", len(left), total, batch)
		}
		t.Logf("cancelled purge left %d of %d records", len(left), total)
		for _, key := range left {
			rec, err := c.dedup.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "inventory", Key: key})
			if err != nil || rec.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED || string(rec.GetRecord().GetResult()) != "ok" {
				t.Fatalf("record %s after a cancelled purge = %v, %v", key, rec, err)
			}
		}

		// A full purge streams the running count after each batch.
		stream, err = c.admin.Purge(ctx, &dedupv1.PurgeRequest{Consumer: "inventory", BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		counts := purgeCounts(t, stream)
		var want []int64
		for n := batch; n <= len(left); n += batch {
			want = append(want, int64(n))
		}
		want = append(want, int64(len(left)))
		if !slices.Equal(counts, want) {
			t.Fatalf("purge counts = %v, want %v", counts, want)
		}
		if keys := listKeys(t, c, "inventory"); len(keys) != 0 {
			t.Fatalf("after the purge %v are left", keys)
		}
		if keys := listKeys(t, c, "payments"); !slices.Equal(keys, []string{"p-1"}) {
			t.Fatalf("another consumer's records = %v, want p-1 untouched", keys)
		}
	})
}

func listKeys(t *testing.T, c adminClients, consumer string) []string {
	t.Helper()
	resp, err := c.dedup.ListRecords(context.Background(), &dedupv1.ListRecordsRequest{Consumer: consumer, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range resp.GetRecords() {
		keys = append(keys, r.GetKey())
	}
	return keys
}

// purgesFinished counts the Purge calls a server has logged as finished.
func purgesFinished(p *process) int {
	n := 0
	for line := range strings.SplitSeq(p.Logs.String(), "\n") {
		if strings.Contains(line, `"grpc.method":"Purge"`) && strings.Contains(line, "finished call") {
			n++
		}
	}
	return n
}

package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/internal/testing/testfs"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

const consumer = "e2e"

// wantError asserts a gRPC error's code and ErrorInfo reason.
func wantError(t *testing.T, err error, code codes.Code, reason string) *status.Status {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("error = %v, want code %v", err, code)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if info.GetReason() != reason || info.GetDomain() != "dedup.v1" {
				t.Fatalf("ErrorInfo = %s/%s, want dedup.v1/%s", info.GetDomain(), info.GetReason(), reason)
			}
			return st
		}
	}
	t.Fatalf("error %v carries no ErrorInfo", err)
	return nil
}

func claim(t *testing.T, c dedupv1.DedupServiceClient, key string, digest []byte, lease time.Duration) *dedupv1.ClaimResponse {
	t.Helper()
	req := &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: digest, Owner: "e2e-test"}
	if lease > 0 {
		req.LeaseTtl = durationpb.New(lease)
	}
	resp, err := c.Claim(context.Background(), req)
	if err != nil {
		t.Fatalf("Claim(%s): %v", key, err)
	}
	return resp
}

func wantOutcome(t *testing.T, resp *dedupv1.ClaimResponse, outcome dedupv1.Outcome, token int64) {
	t.Helper()
	if resp.GetOutcome() != outcome || resp.GetRecord().GetFencingToken() != token {
		t.Fatalf("claim = %v, want %v with record token %d", resp, outcome, token)
	}
}

// TestEveryOutcomeSurvivesRestart drives every outcome and error code of the
// API through the real binary, restarting it between a Complete and the
// claims that must replay it.
func TestEveryOutcomeSurvivesRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		srv := startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))
		digest := []byte("sha256:order-1")
		result := []byte{0, 1, 2, 255, 'o', 'k'}

		first := claim(t, c, "order-1", digest, time.Minute)
		wantOutcome(t, first, dedupv1.Outcome_OUTCOME_ACQUIRED, 1)
		busy := claim(t, c, "order-1", digest, 0)
		wantOutcome(t, busy, dedupv1.Outcome_OUTCOME_IN_PROGRESS, 1)
		if ra := busy.GetRetryAfter().AsDuration(); ra <= 0 || ra > time.Minute {
			t.Fatalf("retry_after = %s, want within the lease", ra)
		}
		_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: "order-1", Digest: []byte("other")})
		wantError(t, err, codes.FailedPrecondition, "DIGEST_MISMATCH")

		ext, err := c.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: consumer, Key: "order-1",
			FencingToken: 1, LeaseTtl: durationpb.New(2 * time.Minute)})
		if err != nil || !ext.GetRecord().GetLeaseExpiresAt().AsTime().After(first.GetRecord().GetLeaseExpiresAt().AsTime()) {
			t.Fatalf("ExtendLease = %v, %v; want a later lease", ext, err)
		}
		_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: "order-1", FencingToken: 2, Result: result})
		wantError(t, err, codes.Aborted, "LEASE_LOST")
		done, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: "order-1", FencingToken: 1, Result: result})
		if err != nil || done.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED {
			t.Fatalf("Complete = %v, %v", done, err)
		}
		again, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: "order-1", FencingToken: 1, Result: result})
		if err != nil || !again.GetRecord().GetUpdatedAt().AsTime().Equal(done.GetRecord().GetUpdatedAt().AsTime()) {
			t.Fatalf("repeated Complete = %v, %v; want the same record", again, err)
		}
		_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: "order-1", FencingToken: 1, Result: []byte("x")})
		wantError(t, err, codes.FailedPrecondition, "ALREADY_FINISHED")

		// A terminal rejection, and a retryable one that releases the key.
		rejectKey(t, c, "order-2", false)
		rejectKey(t, c, "order-3", true)

		srv.stop(t)
		srv = startDedupd(t, flags...)
		c = dedupv1.NewDedupServiceClient(srv.dial(t))

		replay := claim(t, c, "order-1", digest, 0)
		wantOutcome(t, replay, dedupv1.Outcome_OUTCOME_COMPLETED, 1)
		if !bytes.Equal(replay.GetRecord().GetResult(), result) || replay.GetFencingToken() != 0 {
			t.Fatalf("replay = %v, want the stored result byte for byte and no token", replay)
		}
		refused := claim(t, c, "order-2", nil, 0)
		wantOutcome(t, refused, dedupv1.Outcome_OUTCOME_REJECTED, 1)
		if refused.GetRecord().GetRejection().GetReason() != "OUT_OF_STOCK" {
			t.Fatalf("rejection replay = %v", refused)
		}
		retried := claim(t, c, "order-3", nil, 0)
		wantOutcome(t, retried, dedupv1.Outcome_OUTCOME_ACQUIRED, 2)
		if retried.GetFencingToken() != 2 || retried.GetRecord().GetAttempts() != 2 {
			t.Fatalf("retry after release = %v, want token 2 and attempt 2", retried)
		}

		_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: "never-claimed"})
		wantError(t, err, codes.NotFound, "RECORD_NOT_FOUND")
		_, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "Bad Consumer", Key: "k"})
		wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
		_, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: strings.Repeat("k", 513)})
		wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
		srv.stop(t)
	})
}

func rejectKey(t *testing.T, c dedupv1.DedupServiceClient, key string, retryable bool) {
	t.Helper()
	got := claim(t, c, key, nil, time.Minute)
	wantOutcome(t, got, dedupv1.Outcome_OUTCOME_ACQUIRED, 1)
	resp, err := c.Reject(context.Background(), &dedupv1.RejectRequest{Consumer: consumer, Key: key,
		FencingToken: got.GetFencingToken(), Reason: "OUT_OF_STOCK", Message: "only 2 left", Retryable: retryable})
	if err != nil {
		t.Fatalf("Reject(%s): %v", key, err)
	}
	want := dedupv1.State_STATE_REJECTED
	if retryable {
		want = dedupv1.State_STATE_RELEASED
	}
	if resp.GetRecord().GetState() != want {
		t.Fatalf("Reject(%s) state = %v, want %v", key, resp.GetRecord().GetState(), want)
	}
}

// TestExpiredLeaseIsTakenOver: a crashed holder's lease runs out, the next
// claim takes over with a greater token, and the old holder is fenced off.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		srv := startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))
		wantOutcome(t, claim(t, c, "job", nil, 50*time.Millisecond), dedupv1.Outcome_OUTCOME_ACQUIRED, 1)
		time.Sleep(150 * time.Millisecond)
		takeover := claim(t, c, "job", nil, time.Minute)
		wantOutcome(t, takeover, dedupv1.Outcome_OUTCOME_ACQUIRED, 2)
		_, err := c.Complete(context.Background(), &dedupv1.CompleteRequest{Consumer: consumer, Key: "job", FencingToken: 1})
		st := wantError(t, err, codes.Aborted, "LEASE_LOST")
		for _, d := range st.Details() {
			if rec, ok := d.(*dedupv1.Record); ok && rec.GetFencingToken() == 2 {
				return
			}
		}
		t.Fatalf("LEASE_LOST carries no current record: %v", st.Details())
	})
}

// TestCompletedRecordsExpire: past the completed TTL a key is new again,
// whether or not the reaper has run.
// TestCompletedRecordsExpire: a record past its expiry is absent to every
// caller, whether the reaper has deleted it (reaper on) or not yet (reaper
// off). Stats tells the two apart: it counts an expired row until the
// reaper deletes it. With the row kept, the next claim's fencing token
// continues from it; once the row is deleted, the key starts over at 1.
func TestCompletedRecordsExpire(t *testing.T) {
	for _, reaper := range []string{"on", "off"} {
		t.Run("reaper="+reaper, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, flags []string) {
				srv := startDedupd(t, append(flags, "--completed-ttl", "100ms", "--reap-interval", "50ms", "--reaper", reaper)...)
				conn := srv.dial(t)
				testCompletedRecordExpires(t, dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn), reaper == "on")
				srv.stop(t)
			})
		})
	}
}

func testCompletedRecordExpires(t *testing.T, c dedupv1.DedupServiceClient, admin dedupv1.AdminServiceClient, reaperOn bool) {
	ctx := context.Background()
	got := claim(t, c, "short-lived", nil, 0)
	if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: "short-lived",
		FencingToken: got.GetFencingToken()}); err != nil {
		t.Fatal(err)
	}
	// Expired: absent to Lookup. Wait for it rather than guess how long.
	opsEventually(t, "the record's expiry", func() bool {
		_, err := c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: "short-lived"})
		return status.Code(err) == codes.NotFound
	})
	expired := func() int64 {
		resp, err := admin.Stats(ctx, &dedupv1.StatsRequest{Consumer: consumer})
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for _, cs := range resp.GetConsumers() {
			n += cs.GetExpired()
		}
		return n
	}
	wantToken := got.GetFencingToken() + 1 // the expired row is kept: the token continues
	if reaperOn {
		opsEventually(t, "the reaper's deletion of the expired record", func() bool { return expired() == 0 })
		wantToken = 1 // deleted: the key starts over
	} else if n := expired(); n != 1 {
		t.Fatalf("with the reaper off, Stats counts %d expired records, want the 1 not yet deleted", n)
	}
	list, err := c.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer})
	if err != nil || len(list.GetRecords()) != 0 {
		t.Fatalf("ListRecords after expiry = %v, %v; want no records", list.GetRecords(), err)
	}
	if again := claim(t, c, "short-lived", []byte("new content"), 0); again.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED ||
		again.GetFencingToken() != wantToken || again.GetRecord().GetAttempts() != 1 {
		t.Fatalf("claim after expiry = %v, want ACQUIRED, token %d, attempt 1", again, wantToken)
	}
}

func TestHealthAndReflection(t *testing.T) {
	srv := startDedupd(t, "--data-dir", t.TempDir())
	conn := srv.dial(t)
	ctx := context.Background()
	for _, service := range []string{"", "dedup.v1.DedupService"} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health(%q) = %v, %v; want SERVING", service, resp, err)
		}
	}
	// The stream must end before the server stops: graceful shutdown waits
	// for open streams.
	streamCtx, endStream := context.WithCancel(ctx)
	defer endStream()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(streamCtx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, ","), "dedup.v1.DedupService") {
		t.Fatalf("reflection lists %v, want dedup.v1.DedupService", names)
	}
	endStream()
	srv.stop(t)
}

// TestSecondServerOnDataDirRefuses: two processes on one embedded data
// directory would race each other's writes, so the second must refuse to
// start, on either engine.
func TestSecondServerOnDataDirRefuses(t *testing.T) {
	for _, engine := range []string{"sqlite", "pebble"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			first := startDedupd(t, "--data-dir", dir, "--embedded-engine", engine)
			out, err := runDedupd(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--embedded-engine", engine)
			if err == nil || !strings.Contains(out, "in use") {
				t.Fatalf("second dedupd on %s: err=%v output=%q; want a refusal saying the directory is in use", dir, err, out)
			}
			first.stop(t)
			second := startDedupd(t, "--data-dir", dir, "--embedded-engine", engine)
			second.stop(t)
		})
	}
}

// TestServeRefusesReadOnlyEmbeddedStore: a dedup.db that cannot be written,
// in a directory that can, must not start a server that reports SERVING and
// then fails every write.
func TestServeRefusesReadOnlyEmbeddedStore(t *testing.T) {
	dir := t.TempDir()
	startDedupd(t, "--data-dir", dir, "--embedded-engine", "sqlite").stop(t) // creates dedup.db
	testfs.MakeReadOnly(t, filepath.Join(dir, "dedup.db"))
	out, err := runDedupd(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--embedded-engine", "sqlite", "--reaper=off")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() <= 0 || !strings.Contains(out, "readonly database") {
		// ExitCode is -1 when runDedupd had to kill a server that started.
		t.Fatalf("serve on a read-only dedup.db: err=%v output=%q; want it to exit at once, saying it cannot write", err, out)
	}
}

// TestServeRefusesUnmigratedDatabase: a shared database is migrated by an
// operator, never silently by whichever server starts first.
func TestServeRefusesUnmigratedDatabase(t *testing.T) {
	out, err := runDedupd(t, "serve", "--listen", "127.0.0.1:0", "--database-url", pgtest.URL(t))
	if err == nil || !strings.Contains(out, "dedupd migrate") {
		t.Fatalf("serve on an empty database: err=%v output=%q; want a refusal naming dedupd migrate", err, out)
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	t.Run("environment is read", func(t *testing.T) {
		t.Setenv("DEDUPD_LOG_FORMAT", "yaml")
		out, err := runDedupd(t, "serve", "--data-dir", t.TempDir())
		if err == nil || !strings.Contains(out, "yaml") {
			t.Fatalf("DEDUPD_LOG_FORMAT=yaml: err=%v output=%q; want it read and refused", err, out)
		}
	})
	t.Run("flag beats environment", func(t *testing.T) {
		t.Setenv("DEDUPD_LOG_FORMAT", "yaml")
		srv := startDedupd(t, "--data-dir", t.TempDir()) // passes --log-format json
		srv.stop(t)
	})
	t.Run("unknown durability", func(t *testing.T) {
		out, err := runDedupd(t, "serve", "--data-dir", t.TempDir(), "--embedded-sync", "sometimes")
		if err == nil || !strings.Contains(out, "--embedded-sync") {
			t.Fatalf("--embedded-sync sometimes: err=%v output=%q; want a refusal naming the flag", err, out)
		}
	})
	t.Run("inconsistent limits", func(t *testing.T) {
		out, err := runDedupd(t, "serve", "--data-dir", t.TempDir(), "--default-lease-ttl", "2h")
		if err == nil || !strings.Contains(out, "--max-lease-ttl") {
			t.Fatalf("default lease above maximum: err=%v output=%q; want a refusal", err, out)
		}
	})
}

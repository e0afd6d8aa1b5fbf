package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestCLIStreams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		streams := dedupv1.NewStreamServiceClient(conn)
		ctx := context.Background()
		claim := func(stream string, seq int64, lease time.Duration) *dedupv1.ClaimStreamResponse {
			t.Helper()
			resp, err := streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "shop", Stream: stream,
				Sequence: seq, Owner: "worker-1", LeaseTtl: durationpb.New(lease)})
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		for seq := int64(1); seq <= 2; seq++ {
			c := claim("order-1", seq, time.Minute)
			if _, err := streams.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "shop", Stream: "order-1",
				Sequence: seq, FencingToken: c.GetFencingToken()}); err != nil {
				t.Fatal(err)
			}
		}
		claim("order-2", 1, time.Millisecond) // abandoned: the reconciliation queue

		rows := tableRows(t, s.ok(t, "streams", "get", "shop", "order-1").stdout)
		for field, want := range map[string]string{"high_water": "2", "last_outcome": "COMPLETED", "in_flight": "-", "lease_expires_at": "-"} {
			if got := strings.Join(rows[field][1:], " "); got != want {
				t.Errorf("get %s = %q, want %q", field, got, want)
			}
		}
		s.fails(t, exitFailure, "STREAM_NOT_FOUND", "streams", "get", "shop", "nope")

		if got := streamsOf(t, s.ok(t, "streams", "list", "shop").stdout); got != "order-1 order-2" {
			t.Errorf("list = %q", got)
		}
		deadline := time.Now().Add(30 * time.Second)
		for streamsOf(t, s.ok(t, "streams", "list", "shop", "--lease-expired").stdout) != "order-2" {
			if time.Now().After(deadline) {
				t.Fatal("order-2 never listed as lease-expired")
			}
			time.Sleep(10 * time.Millisecond)
		}

		r := s.ok(t, "streams", "reset", "shop", "order-1", "--high-water", "1", "--dry-run")
		if !strings.Contains(r.stdout, "dry run") {
			t.Errorf("dry run output:\n%s", r.stdout)
		}
		if got := strings.Join(tableRows(t, s.ok(t, "streams", "get", "shop", "order-1").stdout)["high_water"][1:], " "); got != "2" {
			t.Errorf("a dry run changed the mark to %q", got)
		}
		s.fails(t, exitUsage, "--yes", "streams", "reset", "shop", "order-1", "--high-water", "1")
		rows = tableRows(t, s.ok(t, "streams", "reset", "shop", "order-1", "--high-water", "1", "--yes").stdout)
		// No event has ended since the reset: no outcome, not UNSPECIFIED.
		for field, want := range map[string]string{"high_water": "1", "last_outcome": "-"} {
			if got := strings.Join(rows[field][1:], " "); got != want {
				t.Errorf("after the reset, %s = %q, want %q", field, got, want)
			}
		}
		if c := claim("order-1", 2, time.Minute); c.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
			t.Errorf("after the reset, event 2 is %v, want it acquired again", c.GetOutcome())
		}

		// A consumer with streams and no records is in stats, counted.
		// The table has the JSON's stream counts too: 2 streams, both
		// in flight, order-2's lease (1ms) expired, and the age of the
		// oldest claim.
		row := tableRows(t, s.ok(t, "stats").stdout)["shop"]
		if want := "shop 0 0 0 0 0 0 - 2 2 1"; len(row) < 12 || strings.Join(row[:11], " ") != want || row[11] == "-" {
			t.Errorf("stats row = %q, want %q and the oldest stream claim's age", row, want)
		}
		var stats dedupv1.StatsResponse
		parseJSON(t, s.ok(t, "stats", "shop", "-o", "json").stdout, &stats)
		if c := stats.GetConsumers(); len(c) != 1 || c[0].GetStreams() != 2 || c[0].GetStreamsInFlight() != 2 ||
			c[0].GetOldestStreamClaimAt() == nil {
			t.Errorf("stats JSON = %v, want 2 streams, both in flight", &stats)
		}
	})
}

// streamsOf returns the stream column of a streams list table, or "" for
// "no streams match".
func streamsOf(t *testing.T, out string) string {
	t.Helper()
	if strings.TrimSpace(out) == "no streams match" {
		return ""
	}
	rows := tableRows(t, out)
	delete(rows, "STREAM")
	return keysOf(rows)
}

func TestCLIStreamsParkedAndSkip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		streams := dedupv1.NewStreamServiceClient(conn)
		for _, seq := range []int64{5, 3} {
			if r, err := streams.ClaimStream(context.Background(), &dedupv1.ClaimStreamRequest{Consumer: "shop", Stream: "order-1",
				Sequence: seq, Park: true, Payload: []byte("event")}); err != nil || r.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_PARKED {
				t.Fatalf("park %d: %v, %v", seq, r, err)
			}
		}
		rows := tableRows(t, s.ok(t, "streams", "parked", "shop", "order-1").stdout)
		for field, want := range map[string]string{"parked": "2 (10 bytes)", "lowest": "3", "highest": "5", "gap_open": "yes: on 1"} {
			if got := strings.Join(rows[field][1:], " "); got != want {
				t.Errorf("parked %s = %q, want %q", field, got, want)
			}
		}
		if _, ok := rows["3"]; !ok {
			t.Errorf("event 3 not listed:\n%v", rows)
		}
		if r := s.ok(t, "streams", "skip", "shop", "order-1", "--dry-run"); !strings.Contains(r.stdout, "would skip sequences 1 to 2") {
			t.Errorf("dry run output:\n%s", r.stdout)
		}
		s.fails(t, exitUsage, "--yes", "streams", "skip", "shop", "order-1")
		if r := s.ok(t, "streams", "skip", "shop", "order-1", "--yes"); !strings.Contains(r.stdout, "skipped sequences 1 to 2") {
			t.Errorf("skip output:\n%s", r.stdout)
		}
		if got := strings.Join(tableRows(t, s.ok(t, "streams", "parked", "shop", "order-1").stdout)["gap_open"][1:], " "); got != "no: the next event is parked" {
			t.Errorf("after the skip, gap_open = %q", got)
		}
		s.fails(t, exitFailure, "NO_GAP", "streams", "skip", "shop", "order-1", "--yes")
	})
}

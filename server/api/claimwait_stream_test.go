package api

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

func TestWaitingStreamClaimOutcomes(t *testing.T) {
	const consumer, stream = "c", "order-1"
	tests := []struct {
		name   string
		lease  time.Duration
		finish func(ctx context.Context, c dedupv1.StreamServiceClient, token int64) error
		want   dedupv1.StreamOutcome
	}{
		{name: "holder completes the sequence", lease: time.Hour, want: dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE,
			finish: func(ctx context.Context, c dedupv1.StreamServiceClient, token int64) error {
				_, err := c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1, FencingToken: token})
				return err
			}},
		{name: "holder rejects the sequence", lease: time.Hour, want: dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE,
			finish: func(ctx context.Context, c dedupv1.StreamServiceClient, token int64) error {
				_, err := c.RejectStream(ctx, &dedupv1.RejectStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1, FencingToken: token, Reason: "POISON"})
				return err
			}},
		{name: "holder releases", lease: time.Hour, want: dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED,
			finish: func(ctx context.Context, c dedupv1.StreamServiceClient, token int64) error {
				_, err := c.ReleaseStream(ctx, &dedupv1.ReleaseStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1, FencingToken: token})
				return err
			}},
		{name: "holder's lease runs out", lease: 300 * time.Millisecond, want: dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour, Poll: noPoll})
			ctx := context.Background()
			claim := &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1, Owner: "holder", LeaseTtl: durationpb.New(tt.lease)}
			held, err := s.streams.ClaimStream(ctx, claim)
			if err != nil || held.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
				t.Fatalf("holder's claim: %v, %v", held, err)
			}
			type reply struct {
				res *dedupv1.ClaimStreamResponse
				err error
			}
			out := make(chan reply, 1)
			go func() {
				res, err := s.streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1,
					Owner: "waiter", Wait: durationpb.New(patience)})
				out <- reply{res, err}
			}()
			if tt.finish != nil {
				s.untilAsleep(t, 1)
				if err := tt.finish(ctx, s.streams, held.GetFencingToken()); err != nil {
					t.Fatal(err)
				}
			}
			got := <-out
			if got.err != nil || got.res.GetOutcome() != tt.want {
				t.Fatalf("waiter got %v, %v; want %v", got.res.GetOutcome(), got.err, tt.want)
			}
			if tt.want == dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED && got.res.GetFencingToken() <= held.GetFencingToken() {
				t.Fatalf("waiter acquired with token %d, not past the holder's %d", got.res.GetFencingToken(), held.GetFencingToken())
			}
		})
	}
	t.Run("negative wait refused", func(t *testing.T) {
		s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour})
		_, err := s.streams.ClaimStream(context.Background(), &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: stream, Sequence: 1,
			Wait: durationpb.New(-time.Millisecond)})
		if info := wantReason(t, err, rpcerrors.ReasonInvalidField); info.GetMetadata()["field"] != "wait" {
			t.Fatalf("refusal names %q", info.GetMetadata()["field"])
		}
	})
}

// The stream's race: many waiters on one sequence; the holder completes
// it and every waiter gets DUPLICATE, or releases it and exactly one
// acquires, completes, and the others then get DUPLICATE.
func TestWaitingStreamClaimRace(t *testing.T) {
	const waiters = 16
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			s := newWaitingServer(t, claimwait.Options{MaxWait: time.Hour, Poll: noPoll})
			ctx := context.Background()
			claim := func(owner string, wait time.Duration) (*dedupv1.ClaimStreamResponse, error) {
				return s.streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "c", Stream: "s", Sequence: 1,
					Owner: owner, LeaseTtl: durationpb.New(time.Hour), Wait: durationpb.New(wait)})
			}
			held, err := claim("holder", 0)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			outcomes := make([]dedupv1.StreamOutcome, waiters)
			for i := range waiters {
				wg.Go(func() {
					res, err := claim(fmt.Sprint("w", i), patience)
					if err != nil {
						t.Error(err)
						return
					}
					outcomes[i] = res.GetOutcome()
					if res.GetOutcome() == dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
						if _, err := s.streams.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "c", Stream: "s",
							Sequence: 1, FencingToken: res.GetFencingToken()}); err != nil {
							t.Error(err)
						}
					}
				})
			}
			s.untilAsleep(t, waiters)
			if release {
				_, err = s.streams.ReleaseStream(ctx, &dedupv1.ReleaseStreamRequest{Consumer: "c", Stream: "s", Sequence: 1, FencingToken: held.GetFencingToken()})
			} else {
				_, err = s.streams.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: "c", Stream: "s", Sequence: 1, FencingToken: held.GetFencingToken()})
			}
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			count := map[dedupv1.StreamOutcome]int{}
			for _, o := range outcomes {
				count[o]++
			}
			want := map[dedupv1.StreamOutcome]int{dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE: waiters}
			if release {
				want = map[dedupv1.StreamOutcome]int{dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED: 1, dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE: waiters - 1}
			}
			if fmt.Sprint(count) != fmt.Sprint(want) {
				t.Fatalf("outcomes %v, want %v", count, want)
			}
		})
	}
}

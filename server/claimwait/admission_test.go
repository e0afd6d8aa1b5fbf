package claimwait

import (
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestAsks(t *testing.T) {
	wait := durationpb.New(0) // set, even at zero: the handler decides what it grants
	for _, tt := range []struct {
		name string
		req  any
		want bool
	}{
		{"claim with wait", &dedupv1.ClaimRequest{Wait: wait}, true},
		{"claim without", &dedupv1.ClaimRequest{}, false},
		{"stream claim with wait", &dedupv1.ClaimStreamRequest{Wait: wait}, true},
		{"stream claim without", &dedupv1.ClaimStreamRequest{}, false},
		{"batch with one waiting item", &dedupv1.ClaimBatchRequest{Items: []*dedupv1.ClaimBatchItem{{}, {Wait: wait}}}, true},
		{"batch without", &dedupv1.ClaimBatchRequest{Items: []*dedupv1.ClaimBatchItem{{}, {}}}, false},
		{"another call", &dedupv1.CompleteRequest{}, false},
	} {
		if got := Asks(tt.req); got != tt.want {
			t.Errorf("%s: Asks = %v, want %v", tt.name, got, tt.want)
		}
	}
}

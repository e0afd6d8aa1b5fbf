package consumer

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestOfReadsEveryDedupServiceRequest: each request type of the service is
// found through its descriptor, so a new request type needs no code here.
func TestOfReadsEveryDedupServiceRequest(t *testing.T) {
	methods := dedupv1.File_dedup_v1_dedup_proto.Services().ByName("DedupService").Methods()
	if methods.Len() == 0 {
		t.Fatal("DedupService has no methods")
	}
	for i := range methods.Len() {
		in := methods.Get(i).Input()
		fd := in.Fields().ByName(fieldName)
		if fd == nil {
			t.Errorf("%s has no consumer field", in.FullName())
		}
	}
	cases := []struct {
		name      string
		req       any
		want      string
		wantNamed bool
	}{
		{"claim", &dedupv1.ClaimRequest{Consumer: "payments", Key: "k"}, "payments", true},
		{"list", &dedupv1.ListRecordsRequest{Consumer: "inventory"}, "inventory", true},
		{"empty consumer", &dedupv1.LookupRequest{Key: "k"}, "", true},
		{"message without the field", &emptypb.Empty{}, "", false},
		{"string field of another name", wrapperspb.String("payments"), "", false},
		{"not a message", "payments", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, named := FromContext(NewContext(context.Background(), tc.req))
			if got != tc.want || named != tc.wantNamed {
				t.Fatalf("consumer = %q (named %v), want %q (named %v)", got, named, tc.want, tc.wantNamed)
			}
		})
	}
}

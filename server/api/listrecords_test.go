package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// listAll pages through a listing with the given page size and returns the
// keys of every page.
func listAll(t *testing.T, c clients, req *dedupv1.ListRecordsRequest) [][]string {
	t.Helper()
	var pages [][]string
	for {
		resp, err := c.dedup.ListRecords(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range resp.GetRecords() {
			keys = append(keys, r.GetKey())
		}
		pages = append(pages, keys)
		if resp.GetNextPageToken() == "" {
			return pages
		}
		if len(pages) > 100 {
			t.Fatal("listing does not end")
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

func TestListRecordsPagesInKeyOrder(t *testing.T) {
	c := newClients(t, 0)
	var want []string
	for i := range 25 {
		key := fmt.Sprintf("order-%02d", 24-i) // inserted in reverse
		c.finish(t, "inv", key)
		want = append([]string{key}, want...)
	}
	c.finish(t, "other", "order-00")

	pages := listAll(t, c, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: 10})
	if len(pages) != 3 || len(pages[0]) != 10 || len(pages[1]) != 10 || len(pages[2]) != 5 {
		t.Fatalf("pages = %v, want 10, 10 and 5 keys", pages)
	}
	if got := slices.Concat(pages...); !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
	// An exact multiple of the page size ends without an empty page.
	pages = listAll(t, c, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: 5, KeyPrefix: "order-1"})
	if len(pages) != 2 || len(pages[1]) != 5 || pages[0][0] != "order-10" {
		t.Fatalf("prefix pages = %v, want order-10..order-19 in two full pages", pages)
	}
	// Defaults: a page of up to 100.
	if pages := listAll(t, c, &dedupv1.ListRecordsRequest{Consumer: "inv"}); len(pages) != 1 || len(pages[0]) != 25 {
		t.Fatalf("default page size gave %v", pages)
	}
}

func TestListRecordsFilters(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	done := c.finish(t, "inv", "a-done")
	waitPast(done.GetUpdatedAt().AsTime())
	claim, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: "b-pending"})
	if err != nil {
		t.Fatal(err)
	}
	only := func(req *dedupv1.ListRecordsRequest) []string {
		t.Helper()
		req.Consumer = "inv"
		return slices.Concat(listAll(t, c, req)...)
	}
	cases := []struct {
		name string
		req  *dedupv1.ListRecordsRequest
		want []string
	}{
		{"completed", &dedupv1.ListRecordsRequest{States: []dedupv1.State{dedupv1.State_STATE_COMPLETED}}, []string{"a-done"}},
		{"pending or completed", &dedupv1.ListRecordsRequest{States: []dedupv1.State{dedupv1.State_STATE_PENDING, dedupv1.State_STATE_COMPLETED}}, []string{"a-done", "b-pending"}},
		{"created from the claim", &dedupv1.ListRecordsRequest{CreatedAfter: claim.GetRecord().GetCreatedAt()}, []string{"b-pending"}},
		{"updated before the claim", &dedupv1.ListRecordsRequest{UpdatedBefore: claim.GetRecord().GetUpdatedAt()}, []string{"a-done"}},
		{"lease expired: none yet", &dedupv1.ListRecordsRequest{LeaseExpired: true}, nil},
	}
	if !claim.GetRecord().GetCreatedAt().AsTime().After(done.GetUpdatedAt().AsTime()) {
		t.Fatalf("the claim (created %v) is not later than the completion (%v)", claim.GetRecord().GetCreatedAt().AsTime(), done.GetUpdatedAt().AsTime())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := only(tc.req); !slices.Equal(got, tc.want) {
				t.Fatalf("keys = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListRecordsRefusesBadRequests(t *testing.T) {
	c := newClients(t, 0)
	ctx := context.Background()
	for i := range 3 {
		c.finish(t, "inv", fmt.Sprintf("k%d", i))
	}
	first, err := c.dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: 1})
	if err != nil || first.GetNextPageToken() == "" {
		t.Fatalf("first page = %v, %v; want a next page token", first, err)
	}
	token := first.GetNextPageToken()
	now := time.Now()
	ts := timestamppb.New
	cases := []struct {
		name  string
		req   *dedupv1.ListRecordsRequest
		field string
	}{
		{"no consumer", &dedupv1.ListRecordsRequest{}, "consumer"},
		{"negative page size", &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: -1}, "page_size"},
		{"unspecified state", &dedupv1.ListRecordsRequest{Consumer: "inv", States: []dedupv1.State{dedupv1.State_STATE_UNSPECIFIED}}, "states"},
		{"key prefix with NUL", &dedupv1.ListRecordsRequest{Consumer: "inv", KeyPrefix: "a\x00"}, "key_prefix"},
		{"key prefix too long", &dedupv1.ListRecordsRequest{Consumer: "inv", KeyPrefix: strings.Repeat("k", MaxKeyBytes+1)}, "key_prefix"},
		{"created range inverted", &dedupv1.ListRecordsRequest{Consumer: "inv", CreatedAfter: ts(now), CreatedBefore: ts(now.Add(-time.Hour))}, "created_before"},
		{"updated range empty", &dedupv1.ListRecordsRequest{Consumer: "inv", UpdatedAfter: ts(now), UpdatedBefore: ts(now)}, "updated_before"},
		{"malformed time", &dedupv1.ListRecordsRequest{Consumer: "inv", UpdatedAfter: &timestamppb.Timestamp{Seconds: -1 << 40}}, "updated_after"},
		{"lease expired without pending", &dedupv1.ListRecordsRequest{Consumer: "inv", LeaseExpired: true, States: []dedupv1.State{dedupv1.State_STATE_COMPLETED}}, "lease_expired"},
		{"garbage token", &dedupv1.ListRecordsRequest{Consumer: "inv", PageToken: "not a token"}, "page_token"},
		{"token with another consumer", &dedupv1.ListRecordsRequest{Consumer: "web", PageToken: token}, "page_token"},
		{"token with other filters", &dedupv1.ListRecordsRequest{Consumer: "inv", KeyPrefix: "k", PageToken: token}, "page_token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.dedup.ListRecords(ctx, tc.req)
			wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, tc.field)
		})
	}
	// The token goes on with another page size, and with the states listed
	// in another order.
	next, err := c.dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: 5, PageToken: token})
	if err != nil || len(next.GetRecords()) != 2 || next.GetRecords()[0].GetKey() != "k1" {
		t.Fatalf("second page = %v, %v; want k1 and k2", next, err)
	}
	two := []dedupv1.State{dedupv1.State_STATE_COMPLETED, dedupv1.State_STATE_PENDING}
	page, err := c.dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: 1, States: two})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(two)
	if _, err := c.dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: "inv", States: two, PageToken: page.GetNextPageToken()}); err != nil {
		t.Fatalf("token with the states reordered: %v", err)
	}
	// A page size over the maximum is cut to it, not refused.
	if _, err := c.dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: MaxPageSize + 1}); err != nil {
		t.Fatalf("page size over the maximum: %v", err)
	}
}

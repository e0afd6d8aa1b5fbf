package api

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// pagedService is a DedupService on a fresh embedded store whose pages are
// bounded by pageBytes, holding records of the given result sizes under
// keys k00, k01, ...; odd keys are rejected with a detail of that size.
func pagedService(t *testing.T, pageBytes int, sizes []int) *DedupService {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := policy.Defaults{Policy: testPolicy, Limits: policy.Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 64 << 10, MaxPageBytes: pageBytes}}
	s := NewDedupService(st, policy.NewKeys(st, d, 0), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for i, size := range sizes {
		key := fmt.Sprintf("k%02d", i)
		c, err := s.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inv", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte{'r'}, size)
		if i%2 == 0 {
			_, err = s.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "inv", Key: key, FencingToken: c.GetFencingToken(), Result: body})
		} else {
			_, err = s.Reject(ctx, &dedupv1.RejectRequest{Consumer: "inv", Key: key, FencingToken: c.GetFencingToken(), Reason: "NO", Detail: body})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// pagesOf lists every page of req.
func pagesOf(t *testing.T, s *DedupService, req *dedupv1.ListRecordsRequest) [][]*dedupv1.Record {
	t.Helper()
	var pages [][]*dedupv1.Record
	for {
		resp, err := s.ListRecords(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, resp.GetRecords())
		if resp.GetNextPageToken() == "" {
			return pages
		}
		if len(pages) > 200 {
			t.Fatal("listing does not end")
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

func size(recs ...*dedupv1.Record) int {
	n := 0
	for _, r := range recs {
		n += proto.Size(r)
	}
	return n
}

// checkPages holds every listing to the documented contract, with
// proto.Size as the oracle: every record once, in key order; each page
// within the budget unless it is one record alone; and each page but the
// last full, in that its next record would not have fitted, or it holds
// page_size records.
func checkPages(t *testing.T, pages [][]*dedupv1.Record, budget, pageSize, total int) {
	t.Helper()
	var keys []string
	for i, page := range pages {
		if len(page) == 0 && len(pages) > 1 {
			t.Fatalf("page %d is empty", i)
		}
		if len(page) > 1 && size(page...) > budget {
			t.Fatalf("page %d holds %d records of %d bytes, over the budget of %d", i, len(page), size(page...), budget)
		}
		if i < len(pages)-1 && len(page) < pageSize && size(page...)+size(pages[i+1][0]) <= budget {
			t.Fatalf("page %d ends early: %d bytes, and the next record of %d bytes would have fitted", i, size(page...), size(pages[i+1][0]))
		}
		for _, r := range page {
			keys = append(keys, r.GetKey())
		}
	}
	want := make([]string, total)
	for i := range want {
		want[i] = fmt.Sprintf("k%02d", i)
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("listed %v, want %v", keys, want)
	}
}

func TestListRecordsPagesByBytes(t *testing.T) {
	sizes := []int{3000, 3000, 3000, 3000, 3000, 100, 100, 9000, 20000, 3000, 3000, 50, 3000, 3000}
	const budget = 10 << 10
	s := pagedService(t, budget, sizes)
	for _, pageSize := range []int32{0, 2, 1000} {
		pages := pagesOf(t, s, &dedupv1.ListRecordsRequest{Consumer: "inv", PageSize: pageSize})
		checkPages(t, pages, budget, cmp.Or(int(pageSize), DefaultPageSize), len(sizes))
		if pageSize == 1000 {
			// By hand: 3 records of about 3 KiB fill 10 KiB; the record
			// of 20,000 bytes is larger than the budget and comes alone.
			if len(pages[0]) != 3 {
				t.Errorf("first page holds %d records of ~3 KiB, want 3 in 10 KiB", len(pages[0]))
			}
			for _, page := range pages {
				if slices.ContainsFunc(page, func(r *dedupv1.Record) bool { return r.GetKey() == "k08" }) && len(page) != 1 {
					t.Errorf("the record over the budget shares its page: %d records", len(page))
				}
			}
		}
	}
}

// TestListRecordsEveryRecordOverTheBudget: when no record fits, each page
// holds one record and paging still ends.
func TestListRecordsEveryRecordOverTheBudget(t *testing.T) {
	sizes := []int{5000, 6000, 7000, 8000}
	s := pagedService(t, 1000, sizes)
	pages := pagesOf(t, s, &dedupv1.ListRecordsRequest{Consumer: "inv"})
	checkPages(t, pages, 1000, DefaultPageSize, len(sizes))
	if len(pages) != len(sizes) {
		t.Fatalf("%d pages, want one per record", len(pages))
	}
}

// TestListRecordsBasicViewLeavesBodiesOut: RECORD_VIEW_BASIC drops result
// and rejection.detail and keeps the rest, so the same budget holds more
// records; unset and FULL return the bodies.
func TestListRecordsBasicViewLeavesBodiesOut(t *testing.T) {
	sizes := []int{3000, 3000, 3000, 3000, 3000, 3000}
	const budget = 10 << 10
	s := pagedService(t, budget, sizes)
	basic := pagesOf(t, s, &dedupv1.ListRecordsRequest{Consumer: "inv", View: dedupv1.RecordView_RECORD_VIEW_BASIC})
	checkPages(t, basic, budget, DefaultPageSize, len(sizes))
	if len(basic) != 1 {
		t.Fatalf("BASIC took %d pages, want 1", len(basic))
	}
	for _, r := range basic[0] {
		if len(r.GetResult()) != 0 || len(r.GetRejection().GetDetail()) != 0 || r.GetState() == dedupv1.State_STATE_UNSPECIFIED {
			t.Fatalf("BASIC record = %v, want no bodies", r)
		}
		if r.GetState() == dedupv1.State_STATE_REJECTED && r.GetRejection().GetReason() != "NO" {
			t.Fatalf("BASIC dropped the rejection reason: %v", r)
		}
	}
	for _, view := range []dedupv1.RecordView{dedupv1.RecordView_RECORD_VIEW_UNSPECIFIED, dedupv1.RecordView_RECORD_VIEW_FULL} {
		full := pagesOf(t, s, &dedupv1.ListRecordsRequest{Consumer: "inv", View: view})
		checkPages(t, full, budget, DefaultPageSize, len(sizes))
		if r := full[0][0]; len(r.GetResult()) != 3000 {
			t.Fatalf("%v record has a result of %d bytes, want 3000", view, len(r.GetResult()))
		}
	}
}

// TestListRecordsPageFitsDefaultClient: with the default budget, pages of
// records of 64 KiB, the most the default policy allows, reach a gRPC
// client left at its default receive limit (4 MiB).
func TestListRecordsPageFitsDefaultClient(t *testing.T) {
	c := newClients(t, 0)
	c.setPolicy(t, &dedupv1.Policy{Consumer: "big", MaxResultBytes: 64 << 10})
	ctx := context.Background()
	for i := range 80 { // about 5 MiB in all
		key := fmt.Sprintf("k%02d", i)
		got, err := c.dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "big", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "big", Key: key,
			FencingToken: got.GetFencingToken(), Result: bytes.Repeat([]byte{'x'}, 64<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	pages := listAll(t, c, &dedupv1.ListRecordsRequest{Consumer: "big", PageSize: 1000})
	if len(pages) != 2 || len(slices.Concat(pages...)) != 80 {
		t.Fatalf("pages of %d records, want 80 records in 2 pages", len(slices.Concat(pages...)))
	}
}

package storetest

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func listTests() []test {
	return []test{
		{"Filters", testListFilters},
		{"KeyOrder", testListKeyOrder},
		{"KeyPrefix", testListKeyPrefix},
		{"Paging", testListPaging},
		{"Refused", testListRefused},
		{"PagingDuringChurn", testListPagingDuringChurn},
	}
}

// makeIn brings a new key of a consumer into state, kept for an hour, with
// a lease of longTTL, and returns the stored record.
func makeIn(t *testing.T, s store.Store, consumer, key string, state store.State) store.Record {
	t.Helper()
	p := claimP(key)
	p.Consumer = consumer
	r := acquire(t, s, p)
	switch state {
	case store.Completed:
		r = complete(t, s, completeP(r, []byte("result of "+key)))
	case store.Rejected:
		r = reject(t, s, rejectP(r, terminal()))
	case store.Released:
		r = reject(t, s, rejectP(r, retryable()))
	}
	return r
}

// listKeys lists with p and returns the keys, checking each record against
// a Lookup of its key: a listing returns whole records.
func listKeys(t *testing.T, s store.Store, p store.ListParams) []string {
	t.Helper()
	recs, err := s.ListRecords(t.Context(), p)
	if err != nil {
		t.Fatalf("ListRecords(%+v): %v", p, err)
	}
	keys := make([]string, 0, len(recs))
	for _, r := range recs {
		checkNormal(t, "ListRecords", r)
		wantSame(t, "ListRecords record "+r.Key+" against Lookup", r, lookup(t, s, r.Consumer, r.Key))
		keys = append(keys, r.Key)
	}
	return keys
}

// testListFilters lists one fixture with each filter. The keys are made one
// after another, a few milliseconds apart, so that their created and
// updated times increase in key order.
func testListFilters(t *testing.T, s store.Store) {
	recs := map[string]store.Record{}
	for _, k := range []struct {
		key   string
		state store.State
	}{
		{"a1", store.Completed}, {"a2", store.Rejected}, {"a3", store.Released},
		{"b1", store.Pending}, {"b2", store.Pending},
	} {
		if k.key == "b2" {
			// Pending with a lease that runs out: the reconciliation queue.
			p := claimP(k.key)
			p.LeaseTTL = shortTTL
			recs[k.key] = acquire(t, s, p)
		} else {
			recs[k.key] = makeIn(t, s, consumer, k.key, k.state)
		}
		time.Sleep(2 * time.Millisecond)
	}
	makeIn(t, s, "billing", "a1", store.Completed)
	makeIn(t, s, "billing", "b9", store.Pending)
	// c1 expires: never listed, whatever the filters.
	acquire(t, s, shortClaim("c1"))
	sleepPast(2 * shortTTL)

	all := store.ListParams{Consumer: consumer, Limit: 100}
	with := func(f func(p *store.ListParams)) store.ListParams {
		p := all
		f(&p)
		return p
	}
	cases := []struct {
		name string
		p    store.ListParams
		want []string
	}{
		{"all", all, []string{"a1", "a2", "a3", "b1", "b2"}},
		{"other consumer", with(func(p *store.ListParams) { p.Consumer = "billing" }), []string{"a1", "b9"}},
		{"unknown consumer", with(func(p *store.ListParams) { p.Consumer = "nobody" }), nil},
		{"completed", with(func(p *store.ListParams) { p.States = []store.State{store.Completed} }), []string{"a1"}},
		{"pending or released", with(func(p *store.ListParams) { p.States = []store.State{store.Pending, store.Released} }), []string{"a3", "b1", "b2"}},
		{"prefix a", with(func(p *store.ListParams) { p.KeyPrefix = "a" }), []string{"a1", "a2", "a3"}},
		{"prefix b", with(func(p *store.ListParams) { p.KeyPrefix = "b" }), []string{"b1", "b2"}},
		{"prefix of the expired key", with(func(p *store.ListParams) { p.KeyPrefix = "c" }), nil},
		{"whole key as prefix", with(func(p *store.ListParams) { p.KeyPrefix = "a2" }), []string{"a2"}},
		{"lease expired", with(func(p *store.ListParams) { p.LeaseExpired = true }), []string{"b2"}},
		{"lease expired, prefix a", with(func(p *store.ListParams) { p.LeaseExpired = true; p.KeyPrefix = "a" }), nil},
		{"created from a3", with(func(p *store.ListParams) { p.CreatedAfter = recs["a3"].CreatedAt }), []string{"a3", "b1", "b2"}},
		{"created before a3", with(func(p *store.ListParams) { p.CreatedBefore = recs["a3"].CreatedAt }), []string{"a1", "a2"}},
		{"created in [a2, b1)", with(func(p *store.ListParams) {
			p.CreatedAfter, p.CreatedBefore = recs["a2"].CreatedAt, recs["b1"].CreatedAt
		}), []string{"a2", "a3"}},
		{"updated from b1", with(func(p *store.ListParams) { p.UpdatedAfter = recs["b1"].UpdatedAt }), []string{"b1", "b2"}},
		{"updated before a2", with(func(p *store.ListParams) { p.UpdatedBefore = recs["a2"].UpdatedAt }), []string{"a1"}},
		{"after a2", with(func(p *store.ListParams) { p.AfterKey = "a2" }), []string{"a3", "b1", "b2"}},
		{"after a2, limit 2", with(func(p *store.ListParams) { p.AfterKey = "a2"; p.Limit = 2 }), []string{"a3", "b1"}},
		{"after the last key", with(func(p *store.ListParams) { p.AfterKey = "b2" }), nil},
		{"after a key that is not stored", with(func(p *store.ListParams) { p.AfterKey = "a" }), []string{"a1", "a2", "a3", "b1", "b2"}},
		{"limit 1", with(func(p *store.ListParams) { p.Limit = 1 }), []string{"a1"}},
		{"everything at once", with(func(p *store.ListParams) {
			p.States = []store.State{store.Pending}
			p.KeyPrefix = "b"
			p.CreatedAfter = recs["a1"].CreatedAt
			p.UpdatedBefore = recs["b2"].UpdatedAt.Add(time.Microsecond)
			p.LeaseExpired = true
			p.AfterKey = "b1"
		}), []string{"b2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := listKeys(t, s, tc.p); !slices.Equal(got, tc.want) {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
}

// Keys come back in bytewise order: uppercase before lowercase, digits
// before letters, multi-byte UTF-8 last. (PostgreSQL orders by the
// database's collation; the suite runs it on a C.UTF-8 database, where that
// is bytewise too.)
func testListKeyOrder(t *testing.T, s store.Store) {
	keys := []string{"b", "B", "a", "A", "10", "9", "a b", "a-b", "ab", "é", "z", "日本", "~", "_x", "%x"}
	for _, k := range keys {
		makeIn(t, s, consumer, k, store.Completed)
	}
	want := slices.Clone(keys)
	sort.Strings(want)
	if got := listKeys(t, s, store.ListParams{Consumer: consumer, Limit: 100}); !slices.Equal(got, want) {
		t.Fatalf("keys %q, want bytewise order %q", got, want)
	}
}

// A prefix matches literally: LIKE's wildcards and escape character, and
// multi-byte characters, are just characters.
func testListKeyPrefix(t *testing.T, s store.Store) {
	keys := []string{"50%_off", "50%x", "50_x", "50ab", "5", `a\b`, `a\bc`, "ab", "aB", "AB", "Ab",
		"é1", "é2", "É1", "e1", "E1", "日本/1", "日本/2", "日/x", "日"}
	for _, k := range keys {
		makeIn(t, s, consumer, k, store.Completed)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"50%", []string{"50%_off", "50%x"}},
		{"50_", []string{"50_x"}},
		{"50%_", []string{"50%_off"}},
		{"5", []string{"5", "50%_off", "50%x", "50_x", "50ab"}},
		{`a\`, []string{`a\b`, `a\bc`}},
		{`a\b`, []string{`a\b`, `a\bc`}},
		{"a", []string{"aB", `a\b`, `a\bc`, "ab"}},
		{"ab", []string{"ab"}},
		{"A", []string{"AB", "Ab"}},
		{"E", []string{"E1"}},
		{"É", []string{"É1"}},
		{"é", []string{"é1", "é2"}},
		{"e", []string{"e1"}},
		{"日本/", []string{"日本/1", "日本/2"}},
		{"日", []string{"日", "日/x", "日本/1", "日本/2"}},
		{"%", nil},
		{"_", nil},
	} {
		got := listKeys(t, s, store.ListParams{Consumer: consumer, KeyPrefix: tc.prefix, Limit: 100})
		if !slices.Equal(got, tc.want) {
			t.Errorf("prefix %q: keys %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

// pageAll lists every page of p, page size p.Limit, and returns all keys in
// the order received.
func pageAll(t *testing.T, s store.Store, p store.ListParams) []string {
	t.Helper()
	var all []string
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		recs, err := s.ListRecords(t.Context(), p)
		if err != nil {
			t.Fatalf("ListRecords(%+v): %v", p, err)
		}
		if len(recs) > p.Limit {
			t.Fatalf("a page of %d records, limit %d", len(recs), p.Limit)
		}
		for _, r := range recs {
			all = append(all, r.Key)
		}
		if len(recs) < p.Limit {
			return all
		}
		p.AfterKey = recs[len(recs)-1].Key
	}
}

func testListPaging(t *testing.T, s store.Store) {
	var want []string
	for i := range 23 {
		k := fmt.Sprintf("k%03d", i)
		want = append(want, k)
		makeIn(t, s, consumer, k, []store.State{store.Pending, store.Completed, store.Rejected, store.Released}[i%4])
	}
	makeIn(t, s, "billing", "k005", store.Completed)
	for _, size := range []int{1, 4, 7, 22, 23, 24, 1000} {
		if got := pageAll(t, s, store.ListParams{Consumer: consumer, Limit: size}); !slices.Equal(got, want) {
			t.Errorf("page size %d: keys %q, want %q", size, got, want)
		}
	}
	got := pageAll(t, s, store.ListParams{Consumer: consumer, States: []store.State{store.Completed}, Limit: 2})
	if want := []string{"k001", "k005", "k009", "k013", "k017", "k021"}; !slices.Equal(got, want) {
		t.Errorf("completed, page size 2: keys %q, want %q", got, want)
	}
}

func testListRefused(t *testing.T, s store.Store) {
	makeIn(t, s, consumer, "k", store.Completed)
	for name, p := range map[string]store.ListParams{
		"no consumer":    {Limit: 10},
		"zero limit":     {Consumer: consumer},
		"negative limit": {Consumer: consumer, Limit: -1},
	} {
		if recs, err := s.ListRecords(t.Context(), p); err == nil {
			t.Errorf("%s: ListRecords accepted it and returned %d records", name, len(recs))
		}
	}
}

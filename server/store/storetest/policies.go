package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func policyTests() []test {
	return []test{
		{"GetMissing", testPolicyGetMissing},
		{"PutGetReplace", testPolicyPutGetReplace},
		{"ListOrdered", testPolicyListOrdered},
		{"Delete", testPolicyDelete},
		{"Refused", testPolicyRefused},
		{"PutRacingItself", testPolicyPutRacingItself},
		{"PutRacingDelete", testPolicyPutRacingDelete},
	}
}

// fullPolicy sets every field, each to a different value, so that a store
// that swaps two columns fails.
func fullPolicy(consumer string) store.ConsumerPolicy {
	return store.ConsumerPolicy{
		Consumer:        consumer,
		CompletedTTL:    72 * time.Hour,
		RejectedTTL:     48*time.Hour + 1500*time.Microsecond,
		ReleasedTTL:     90 * time.Minute,
		DefaultLeaseTTL: 45 * time.Second,
		MaxLeaseTTL:     2 * time.Hour,
		MaxResultBytes:  64 << 10,
		RequireDigest:   true,
	}
}

func putPolicy(t *testing.T, s store.Store, p store.ConsumerPolicy) store.ConsumerPolicy {
	t.Helper()
	got, err := s.PutPolicy(t.Context(), p)
	if err != nil {
		t.Fatalf("PutPolicy(%q): %v", p.Consumer, err)
	}
	return got
}

func getPolicy(t *testing.T, s store.Store, consumer string) store.ConsumerPolicy {
	t.Helper()
	got, err := s.GetPolicy(t.Context(), consumer)
	if err != nil {
		t.Fatalf("GetPolicy(%q): %v", consumer, err)
	}
	return got
}

// wantPolicy compares everything but UpdatedAt, which only the store knows;
// it must be set, UTC, to the microsecond.
func wantPolicy(t *testing.T, call string, got, want store.ConsumerPolicy) {
	t.Helper()
	if got.UpdatedAt.IsZero() || got.UpdatedAt != store.Now(got.UpdatedAt) {
		t.Errorf("%s: UpdatedAt = %v, want a UTC time with microsecond precision", call, got.UpdatedAt)
	}
	got.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", call, got, want)
	}
}

func testPolicyGetMissing(t *testing.T, s store.Store) {
	if p, err := s.GetPolicy(t.Context(), "nobody"); !errors.Is(err, store.ErrNoPolicy) {
		t.Fatalf("GetPolicy of a consumer without one = %+v, %v; want ErrNoPolicy", p, err)
	}
	if ps, err := s.ListPolicies(t.Context()); err != nil || len(ps) != 0 {
		t.Fatalf("ListPolicies on an empty store = %+v, %v; want none", ps, err)
	}
}

func testPolicyPutGetReplace(t *testing.T, s store.Store) {
	want := fullPolicy(consumer)
	first := putPolicy(t, s, want)
	wantPolicy(t, "PutPolicy", first, want)
	got := getPolicy(t, s, consumer)
	wantPolicy(t, "GetPolicy", got, want)
	if !got.UpdatedAt.Equal(first.UpdatedAt) {
		t.Errorf("GetPolicy UpdatedAt %v, PutPolicy returned %v", got.UpdatedAt, first.UpdatedAt)
	}

	// A replacement replaces every field, zeros (server defaults) included.
	replacement := store.ConsumerPolicy{Consumer: consumer, CompletedTTL: time.Hour}
	second := putPolicy(t, s, replacement)
	wantPolicy(t, "PutPolicy (replace)", second, replacement)
	wantPolicy(t, "GetPolicy after replace", getPolicy(t, s, consumer), replacement)
	if second.UpdatedAt.Before(first.UpdatedAt) {
		t.Errorf("replacement UpdatedAt %v is before the first %v", second.UpdatedAt, first.UpdatedAt)
	}
	if ps, err := s.ListPolicies(t.Context()); err != nil || len(ps) != 1 {
		t.Fatalf("ListPolicies after a replace = %+v, %v; want one policy", ps, err)
	}

	// Durations are kept to the microsecond, like every stored time.
	fine := store.ConsumerPolicy{Consumer: "fine", CompletedTTL: time.Second + 1500*time.Nanosecond}
	want = fine
	want.CompletedTTL = time.Second + time.Microsecond
	wantPolicy(t, "PutPolicy (sub-microsecond)", putPolicy(t, s, fine), want)
	wantPolicy(t, "GetPolicy (sub-microsecond)", getPolicy(t, s, "fine"), want)
}

func testPolicyListOrdered(t *testing.T, s store.Store) {
	// Inserted out of order; listed bytewise, uppercase before lowercase.
	names := []string{"payments", "Inventory", "webhooks", "a.b", "émail", "a"}
	for i, name := range names {
		p := fullPolicy(name)
		p.MaxResultBytes = int64(i)
		putPolicy(t, s, p)
	}
	ps, err := s.ListPolicies(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Consumer)
		wantPolicy(t, "ListPolicies "+p.Consumer, p, getPolicy(t, s, p.Consumer))
	}
	want := []string{"Inventory", "a", "a.b", "payments", "webhooks", "émail"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ListPolicies order %q, want %q", got, want)
	}
}

func testPolicyDelete(t *testing.T, s store.Store) {
	want := fullPolicy(consumer)
	putPolicy(t, s, want)
	putPolicy(t, s, fullPolicy("other"))
	deleted, err := s.DeletePolicy(t.Context(), consumer)
	if err != nil {
		t.Fatalf("DeletePolicy: %v", err)
	}
	wantPolicy(t, "DeletePolicy", deleted, want)
	if _, err := s.GetPolicy(t.Context(), consumer); !errors.Is(err, store.ErrNoPolicy) {
		t.Fatalf("GetPolicy after delete: %v, want ErrNoPolicy", err)
	}
	if _, err := s.DeletePolicy(t.Context(), consumer); !errors.Is(err, store.ErrNoPolicy) {
		t.Fatalf("second DeletePolicy: %v, want ErrNoPolicy", err)
	}
	wantPolicy(t, "other consumer's policy", getPolicy(t, s, "other"), fullPolicy("other"))
}

// A refused policy stores nothing.
func testPolicyRefused(t *testing.T, s store.Store) {
	for name, p := range map[string]store.ConsumerPolicy{
		"no consumer":     {CompletedTTL: time.Hour},
		"negative ttl":    {Consumer: consumer, RejectedTTL: -time.Second},
		"negative lease":  {Consumer: consumer, MaxLeaseTTL: -time.Second},
		"negative result": {Consumer: consumer, MaxResultBytes: -1},
	} {
		if got, err := s.PutPolicy(t.Context(), p); err == nil {
			t.Errorf("%s: PutPolicy accepted it: %+v", name, got)
		}
	}
	if ps, err := s.ListPolicies(t.Context()); err != nil || len(ps) != 0 {
		t.Fatalf("ListPolicies after refusals = %+v, %v; want none", ps, err)
	}
}

// Concurrent replacements of one policy leave exactly one of them, whole.
func testPolicyPutRacingItself(t *testing.T, s store.Store) {
	const n = 16
	errs := make([]error, n)
	variant := func(i int) store.ConsumerPolicy {
		p := fullPolicy(consumer)
		p.CompletedTTL = time.Duration(i+1) * time.Hour
		p.MaxResultBytes = int64(i + 1)
		p.RequireDigest = i%2 == 0
		return p
	}
	concurrently(n, func(i int) {
		_, errs[i] = s.PutPolicy(t.Context(), variant(i))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("PutPolicy %d: %v", i, err)
		}
	}
	got := getPolicy(t, s, consumer)
	i := int(got.MaxResultBytes) - 1
	if i < 0 || i >= n {
		t.Fatalf("stored policy %+v is none of those written", got)
	}
	wantPolicy(t, "the policy left by the race", got, variant(i))
	if ps, err := s.ListPolicies(t.Context()); err != nil || len(ps) != 1 {
		t.Fatalf("ListPolicies = %+v, %v; want one policy", ps, err)
	}
}

// Puts and deletes of one policy, and puts of other consumers' policies, in
// a crowd: every call succeeds or reports ErrNoPolicy, and the others'
// policies all land.
func testPolicyPutRacingDelete(t *testing.T, s store.Store) {
	const n = 24
	putPolicy(t, s, fullPolicy(consumer))
	errs := make([]error, n)
	concurrently(n, func(i int) {
		switch i % 3 {
		case 0:
			_, errs[i] = s.PutPolicy(t.Context(), fullPolicy(consumer))
		case 1:
			if _, err := s.DeletePolicy(t.Context(), consumer); !errors.Is(err, store.ErrNoPolicy) {
				errs[i] = err
			}
		case 2:
			_, errs[i] = s.PutPolicy(t.Context(), fullPolicy(fmt.Sprintf("c%02d", i)))
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	ps, err := s.ListPolicies(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, p := range ps {
		if p.Consumer != consumer {
			others++
			wantPolicy(t, "policy of "+p.Consumer, p, fullPolicy(p.Consumer))
		}
	}
	if others != n/3 {
		t.Fatalf("%d other consumers' policies stored, want %d", others, n/3)
	}
}

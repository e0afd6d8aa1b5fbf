package pgstore

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestOnRetryIsToldOfEveryRetry: the hook given to Open sees every retry:
// two lost compare-and-sets then success
// make two retries of the named operation; a refusal makes none.
func TestOnRetryIsToldOfEveryRetry(t *testing.T) {
	var seen []string
	// The pool connects lazily: no database is needed to open the store.
	s, err := Open(context.Background(), "postgres://127.0.0.1:1/none?sslmode=disable",
		Options{OnRetry: func(op string) { seen = append(seen, op) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	fails := 2
	err = s.withRetry(context.Background(), "complete", func(context.Context) error {
		if fails > 0 {
			fails--
			return errConcurrentWrite
		}
		return nil
	})
	if err != nil || !slices.Equal(seen, []string{"complete", "complete"}) {
		t.Fatalf("err = %v, retries seen = %v; want nil and two retries of complete", err, seen)
	}

	seen = nil
	refusal := errors.New("refused")
	if err := s.withRetry(context.Background(), "claim", func(context.Context) error { return refusal }); err == nil || len(seen) != 0 {
		t.Fatalf("err = %v, retries seen = %v; want an error and no retries", err, seen)
	}
}

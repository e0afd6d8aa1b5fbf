package loadtest

import "testing"

// Scrambled keys never repeat within a run.
func TestKeysAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range int64(100000) {
		k := keyOf("new", i)
		if seen[k] {
			t.Fatalf("key %d repeats %q", i, k)
		}
		seen[k] = true
	}
}

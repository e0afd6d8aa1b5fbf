package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/testfs"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// A dedup.db that cannot be written, in a directory that can, must not
// open: a store that opened would answer health checks and reads, and fail
// every write.
func TestOpenRefusesAReadOnlyDatabase(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	claim(t, s, "k", []byte("d"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testfs.MakeReadOnly(t, filepath.Join(dir, "dedup.db"))

	s, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{})
	if err == nil {
		_, claimErr := s.Claim(context.Background(), claimCmd("other", "d"))
		s.Close()
		t.Fatalf("Open of a read-only dedup.db succeeded (a claim then returned %v); want an error", claimErr)
	}
	if errors.Is(err, sqlitestore.ErrLocked) {
		t.Fatalf("Open: %v; want a read-only error, not ErrLocked", err)
	}
	t.Logf("Open refused: %v", err)
}

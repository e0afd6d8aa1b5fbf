package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMakeReadOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	MakeReadOnly(t, file)
	if err := os.WriteFile(file, []byte("y"), 0o600); err == nil {
		t.Fatal("wrote a file MakeReadOnly made read-only")
	}
}

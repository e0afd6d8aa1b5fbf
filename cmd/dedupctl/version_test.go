package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionNamesTheCommit builds both binaries as the Makefile and CI do
// (-buildvcs=true, in this checkout) and checks that --version reports the
// commit git names: the oracle is git, not the version package.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout, so no VCS revision to stamp: %v", err)
	}
	rev := strings.TrimSpace(string(head))
	dir := t.TempDir()
	build := exec.Command("go", "build", "-buildvcs=true", "-o", dir+"/", "github.com/dedupd/dedupd/cmd/dedupd", "github.com/dedupd/dedupd/cmd/dedupctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, program := range []string{"dedupd", "dedupctl"} {
		bin := filepath.Join(dir, program)
		js, err := exec.Command(bin, "--version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("%s --version -o json: %v", program, err)
		}
		var got struct {
			Program, Version, Revision string
		}
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatalf("%s --version -o json = %q: %v", program, js, err)
		}
		if got.Revision == "" && inWorktree(t) {
			t.Skip("a linked git worktree: go build stamps no VCS revision there (a clone, as CI's, does)")
		}
		if got.Program != program || got.Revision != rev || got.Version == "" {
			t.Errorf("%s --version -o json = %+v, want program %s, revision %s", program, got, program, rev)
		}
		text, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", program, err)
		}
		if want := program + " "; !strings.HasPrefix(string(text), want) || !strings.Contains(string(text), rev[:12]) {
			t.Errorf("%s --version = %q, want %q... naming %s", program, text, want, rev[:12])
		}
	}
}

// inWorktree reports a linked worktree (git-dir differs from the common
// git-dir), where the go command finds no VCS information to stamp.
func inWorktree(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--git-dir", "--git-common-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	dirs := strings.Fields(string(out))
	return len(dirs) == 2 && dirs[0] != dirs[1]
}

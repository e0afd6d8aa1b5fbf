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
		text, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", program, err)
		}
		if want := program + " "; !strings.HasPrefix(string(text), want) || !strings.Contains(string(text), rev[:12]) {
			t.Errorf("%s --version = %q, want %q... naming %s", program, text, want, rev[:12])
		}
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
		if got.Program != program || got.Revision != rev || got.Version == "" {
			t.Errorf("%s --version -o json = %+v, want program %s, revision %s", program, got, program, rev)
		}
	}
}

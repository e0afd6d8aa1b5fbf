package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEveryDurationFlagTakesDays: every duration flag of every dedupd
// command reads days as dedupctl does (serve --completed-ttl 7d), with
// the one parser (internal/duration), and the environment too.
func TestEveryDurationFlagTakesDays(t *testing.T) {
	root := newRootCommand()
	seen := 0
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			seen++
			if err := f.Value.Set("1d12h"); err != nil || f.Value.String() != "36h" {
				t.Errorf("%s --%s 1d12h: %v, reads back %q", cmd.CommandPath(), f.Name, err, f.Value.String())
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen < 20 {
		t.Fatalf("only %d duration flags found", seen)
	}

	t.Setenv("DEDUPD_RELEASED_TTL", "2d")
	root = newRootCommand()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags([]string{"--completed-ttl", "7d"}); err != nil {
		t.Fatal(err)
	}
	if err := root.PersistentPreRunE(serve, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"completed-ttl": "168h", "released-ttl": "48h"} {
		if got := serve.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", name, got, want)
		}
	}
}

// TestBadFlagExitsTwo: a mistake on the command line exits 2, as
// dedupctl's do; a failure to run exits 1.
func TestBadFlagExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--no-such-flag"}, 2},
		{[]string{"--no-such-flag"}, 2},
		{[]string{"probe", "--timeout", "soon"}, 2},
		{[]string{"probe", "--server", "127.0.0.1:1", "--timeout", "30s"}, 1},
	} {
		_, err := runDedupd(t, tc.args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
			t.Errorf("dedupd %v: %v, want exit %d", tc.args, err, tc.code)
		}
	}
}

// TestFailedBindLeavesNoDataDir: serve with any of its listen addresses on
// a port already taken fails, names the address, and does not create its
// fresh --data-dir: every listener is bound before the store opens.
func TestFailedBindLeavesNoDataDir(t *testing.T) {
	for _, flag := range []string{"--listen", "--http-listen", "--metrics-listen"} {
		t.Run(flag, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			dataDir := filepath.Join(t.TempDir(), "fresh")
			args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, flag, taken.Addr().String()}
			out, err := runDedupd(t, args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, taken.Addr().String()) {
				t.Fatalf("serve %s on a taken port: %v, output %q; want exit 1 naming %s", flag, err, out, taken.Addr())
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--data-dir %s after the failed bind of %s: %v, want it not to exist", dataDir, flag, err)
			}
		})
	}
}

// TestServeHelpNamesSectionsThatExist: every docs section serve --help
// names by title (docs/PAGE.md, "Title") is a heading of that page.
func TestServeHelpNamesSectionsThatExist(t *testing.T) {
	out, err := runDedupd(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(docs/[a-z]+\.md), "([^"]+)"`).FindAllStringSubmatch(out, -1)
	if len(refs) == 0 {
		t.Fatal("serve --help names no docs section; the test finds none to check")
	}
	for _, ref := range refs {
		page, err := os.ReadFile(filepath.Join("..", "..", ref[1]))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(ref[2]) + `$`).Match(page) {
			t.Errorf("serve --help names %s, %q: no such heading", ref[1], ref[2])
		}
	}
}

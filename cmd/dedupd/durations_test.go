package main

import (
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

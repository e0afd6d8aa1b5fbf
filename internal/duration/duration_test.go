package duration

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"72h", 72 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"30s", 30 * time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"0", 0, false},
		{"7d", 7 * 24 * time.Hour, false},
		{"1d12h", 36 * time.Hour, false},
		{"-2h", -2 * time.Hour, false},
		{"-1d", -24 * time.Hour, false},
		{"d", 0, true},
		{"7days", 0, true},
		{"12h1d", 0, true},
		{"", 0, true},
		{"soon", 0, true},
		{"999999999999d", 0, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{72 * time.Hour, "72h"},
		{30 * time.Second, "30s"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 30*time.Second, "1h30s"},
		{time.Hour + 500*time.Millisecond, "1h500ms"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
		{-2 * time.Minute, "-2m"},
		{7 * 24 * time.Hour, "168h"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := Parse(Format(tt.in)); err != nil || back != tt.in {
			t.Errorf("Parse(Format(%v)) = %v, %v", tt.in, back, err)
		}
	}
}

// TestAdopt: a tree's pflag duration flags, persistent or not, on the
// root or a subcommand, take days once adopted, set the variable they
// were declared with, and keep their default.
func TestAdopt(t *testing.T) {
	var ttl, timeout time.Duration
	root := &cobra.Command{Use: "root"}
	root.PersistentFlags().DurationVar(&timeout, "timeout", 30*time.Second, "")
	sub := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
	sub.Flags().DurationVar(&ttl, "completed-ttl", 24*time.Hour, "")
	root.AddCommand(sub)
	Adopt(root)
	if got := sub.Flags().Lookup("completed-ttl").DefValue; got != "24h" {
		t.Errorf("default shown as %q, want 24h", got)
	}
	root.SetArgs([]string{"serve", "--completed-ttl", "7d", "--timeout", "1d1h"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if ttl != 7*24*time.Hour || timeout != 25*time.Hour {
		t.Fatalf("--completed-ttl 7d, --timeout 1d1h set %v and %v", ttl, timeout)
	}
	root.SetArgs([]string{"serve", "--completed-ttl", "7 days"})
	if err := root.Execute(); err == nil {
		t.Fatal("a malformed duration was accepted")
	}
}

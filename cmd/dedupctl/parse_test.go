package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/duration"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"65536", 65536, false},
		{"0", 0, false},
		{"64KiB", 64 << 10, false},
		{"64kib", 64 << 10, false},
		{"1MiB", 1 << 20, false},
		{"2GiB", 2 << 30, false},
		{"100B", 100, false},
		{" 8 KiB ", 8 << 10, false},
		{"64KB", 0, true},
		{"1.5MiB", 0, true},
		{"-1", 0, true},
		{"KiB", 0, true},
		{"", 0, true},
		{"99999999999999999999", 0, true},
		{"9000000000GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseTimeBound(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05+02:00", time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC), false},
		{"2h", now.Add(-2 * time.Hour), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"-2h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"2026-01-02", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseTimeBound(tt.in, now)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("parseTimeBound(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseStates(t *testing.T) {
	tests := []struct {
		in      []string
		want    []dedupv1.State
		wantErr bool
	}{
		{nil, nil, false},
		{[]string{"pending,completed"}, []dedupv1.State{dedupv1.State_STATE_PENDING, dedupv1.State_STATE_COMPLETED}, false},
		{[]string{"REJECTED", "state_released"}, []dedupv1.State{dedupv1.State_STATE_REJECTED, dedupv1.State_STATE_RELEASED}, false},
		{[]string{"pending,"}, []dedupv1.State{dedupv1.State_STATE_PENDING}, false},
		{[]string{"unspecified"}, nil, true},
		{[]string{"done"}, nil, true},
	}
	for _, tt := range tests {
		got, err := parseStates(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseStates(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestFormatParsesBack checks that what dedupctl prints is what it reads.
func TestFormatParsesBack(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 90 * time.Second, 72 * time.Hour, time.Hour + 30*time.Second, 1500 * time.Millisecond} {
		got, err := duration.Parse(duration.Format(d))
		if err != nil || got != d {
			t.Errorf("duration.Parse(duration.Format(%v) = %q) = %v, %v", d, duration.Format(d), got, err)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1536, 64 << 10, 1 << 20, 3 << 30} {
		got, err := parseSize(formatSize(n))
		if err != nil || got != n {
			t.Errorf("parseSize(formatSize(%d) = %q) = %d, %v", n, formatSize(n), got, err)
		}
	}
}

func TestFlagValues(t *testing.T) {
	var d time.Duration
	if err := (durationFlag{&d}).Set("-1h"); err == nil {
		t.Error("durationFlag accepted a negative duration")
	}
	if err := (durationFlag{&d}).Set("7d"); err != nil || (durationFlag{&d}).String() != "168h" {
		t.Errorf("durationFlag 7d = %v, %v", d, err)
	}
	var n int64
	if err := (sizeFlag{&n}).Set("64KiB"); err != nil || n != 65536 || (sizeFlag{&n}).String() != "64KiB" {
		t.Errorf("sizeFlag 64KiB = %d, %v", n, err)
	}
}

// TestEveryDurationFlagTakesDays: every duration flag of every dedupctl
// command, --timeout and bench's included, reads days.
func TestEveryDurationFlagTakesDays(t *testing.T) {
	root := newRootCommand(&app{})
	seen := 0
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			seen++
			if err := f.Value.Set("1d"); err != nil {
				t.Errorf("%s --%s 1d: %v", cmd.CommandPath(), f.Name, err)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen < 5 {
		t.Fatalf("only %d duration flags found", seen)
	}
}

package main

import (
	"reflect"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
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

func TestParseDuration(t *testing.T) {
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
		{"d", 0, true},
		{"7days", 0, true},
		{"12h1d", 0, true},
		{"", 0, true},
		{"soon", 0, true},
		{"999999999999d", 0, true},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
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
		got, err := parseDuration(formatDuration(d))
		if err != nil || got != d {
			t.Errorf("parseDuration(formatDuration(%v) = %q) = %v, %v", d, formatDuration(d), got, err)
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

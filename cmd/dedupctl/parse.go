package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dedupd/dedupd/internal/duration"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// parseSize reads a byte count: a plain number (65536), or a number with a
// binary unit B, KiB, MiB or GiB (64KiB, 1MiB), case-insensitive. Decimal
// units (KB, MB) are refused because they are ambiguous.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, optionally with B, KiB, MiB or GiB", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	mult := int64(1)
	switch strings.ToLower(unit) {
	case "", "b":
	case "kib":
		mult = 1 << 10
	case "mib":
		mult = 1 << 20
	case "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q; use B, KiB, MiB or GiB", s, unit)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}

// parseTimeBound reads a point in time: RFC 3339 (2026-01-02T15:04:05Z), or
// a duration meaning that long before now (2h, 7d).
func parseTimeBound(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := duration.Parse(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-01-02T15:04:05Z) or an age such as 2h or 7d", s)
	}
	return now.Add(-d), nil
}

// parseStates reads a comma-separated list of states, such as
// "pending,completed"; names may carry the STATE_ prefix and any case.
func parseStates(list []string) ([]dedupv1.State, error) {
	var states []dedupv1.State
	for _, item := range list {
		for name := range strings.SplitSeq(item, ",") {
			name = strings.ToUpper(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			v, ok := dedupv1.State_value["STATE_"+strings.TrimPrefix(name, "STATE_")]
			if !ok || v == int32(dedupv1.State_STATE_UNSPECIFIED) {
				return nil, fmt.Errorf("state %q: want pending, completed, rejected or released", strings.ToLower(name))
			}
			states = append(states, dedupv1.State(v))
		}
	}
	return states, nil
}

// durationFlag is a pflag value for a non-negative duration in
// parseDuration's syntax.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return duration.Format(*f.d)
}

func (f durationFlag) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

func (durationFlag) Type() string { return "duration" }

// sizeFlag is a pflag value for a byte count in parseSize's syntax.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return formatSize(*f.n)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

func (sizeFlag) Type() string { return "size" }

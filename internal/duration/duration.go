// Package duration is the one duration syntax of dedupd and dedupctl: a
// Go duration (72h, 1h30m, 90s, 250ms) that may start with a number of
// days (7d, 1d12h), read by Parse and written by Format, for every flag
// (Adopt turns a command tree's duration flags over to it) and every
// command argument of both programs.
package duration

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// leadingDays matches a days prefix such as "7d" in "7d12h".
var leadingDays = regexp.MustCompile(`^(\d+)d`)

// Parse reads a Go duration that may start with a number of days. A bare
// 0 is zero; a leading - negates the whole.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	var days time.Duration
	if m := leadingDays.FindStringSubmatch(body); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > int64(math.MaxInt64/(24*time.Hour)) {
			return 0, fmt.Errorf("duration %q: too large", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		body = body[len(m[0]):]
	}
	var rest time.Duration
	if body != "" || days == 0 {
		var err error
		if rest, err = time.ParseDuration(body); err != nil {
			return 0, fmt.Errorf("duration %q: want a duration such as 30s, 1h30m, 72h or 7d", s)
		}
	}
	d := days + rest
	if d < days { // overflow
		return 0, fmt.Errorf("duration %q: too large", s)
	}
	if neg {
		d = -d
	}
	return d, nil
}

// Format writes d as Parse reads it, in hours, minutes and below (72h,
// 1h30s, 1.5s): days would hide how many hours a default is.
func Format(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	var b strings.Builder
	b.WriteString(sign)
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
		d -= m * time.Minute
	}
	if d > 0 {
		// Below a minute time.Duration's own form is already minimal:
		// 30s, 1.5s, 250ms.
		b.WriteString(d.String())
	}
	return b.String()
}

// Value is a pflag value of a duration in Parse's syntax.
type Value struct{ D *time.Duration }

func (v Value) String() string {
	if v.D == nil {
		return ""
	}
	return Format(*v.D)
}

// Set reads s with Parse.
func (v Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	*v.D = d
	return nil
}

// Type names the kind of value in help and errors.
func (Value) Type() string { return "duration" }

// durationPtr is the type every pflag duration value converts to: pflag's
// own value is a named time.Duration, so a pointer to it converts to
// *time.Duration.
var durationPtr = reflect.TypeFor[*time.Duration]()

// Adopt gives every duration flag of cmd and its subcommands (declared
// with pflag's DurationVar, as most are) Parse's syntax, keeping the
// variable it sets and its default. Call it once the tree is built, before
// it parses anything.
func Adopt(cmd *cobra.Command) {
	adoptSet(cmd.PersistentFlags())
	adoptSet(cmd.Flags())
	for _, sub := range cmd.Commands() {
		Adopt(sub)
	}
}

func adoptSet(flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		if _, ours := f.Value.(Value); ours || f.Value.Type() != "duration" {
			return
		}
		v := reflect.ValueOf(f.Value)
		if v.Kind() != reflect.Pointer || !v.CanConvert(durationPtr) {
			return // a duration flag of its own kind, with its own rules
		}
		f.Value = Value{D: v.Convert(durationPtr).Interface().(*time.Duration)}
		f.DefValue = f.Value.String()
	})
}

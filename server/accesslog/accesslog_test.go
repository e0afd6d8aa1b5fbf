package accesslog

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/loglimit"
)

// lines is a slog handler that keeps what it is given.
type lines struct {
	mu      sync.Mutex
	level   slog.Level
	records []slog.Record
}

func (l *lines) Enabled(_ context.Context, level slog.Level) bool { return level >= l.level }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) attrs(i int) map[string]string {
	out := map[string]string{"msg": l.records[i].Message, "level": l.records[i].Level.String()}
	l.records[i].Attrs(func(a slog.Attr) bool {
		out[a.Key] = a.Value.String()
		return true
	})
	return out
}

// clock is a time the test moves by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// call runs one unary call through the interceptor: the handler takes took
// on the test's clock and returns err.
func call(t *testing.T, l *Log, c *clock, consumerName string, took time.Duration, err error) {
	t.Helper()
	ctx := consumer.NewContext(context.Background(), &dedupv1.ClaimRequest{Consumer: consumerName})
	info := &grpc.UnaryServerInfo{FullMethod: "/dedup.v1.DedupService/Claim"}
	_, got := l.UnaryServerInterceptor()(ctx, nil, info, func(context.Context, any) (any, error) {
		c.now = c.now.Add(took)
		return nil, err
	})
	if !errors.Is(got, err) {
		t.Fatalf("interceptor returned %v, want the handler's %v", got, err)
	}
}

// By default: a line for a failed call and for a slow call, none for a fast
// successful one; the threshold and the clock are the test's, so nothing
// depends on how fast the machine is.
func TestDefaultLogsFailedAndSlowCallsOnly(t *testing.T) {
	out := &lines{level: slog.LevelInfo}
	c := &clock{now: time.Unix(1000, 0)}
	l := New(slog.New(out), Options{Slow: 250 * time.Millisecond, Now: c.Now,
		Failed: loglimit.NewWithClock(1, 10, c.Now)})

	call(t, l, c, "inventory", 249*time.Millisecond, nil)
	if len(out.records) != 0 {
		t.Fatalf("a fast successful call was logged: %v", out.attrs(0))
	}
	call(t, l, c, "inventory", time.Millisecond, status.Error(codes.Unavailable, "store unavailable; retry"))
	call(t, l, c, "inventory", 250*time.Millisecond, nil)
	if len(out.records) != 2 {
		t.Fatalf("%d lines, want one for the failed call and one for the slow call", len(out.records))
	}
	failed, slow := out.attrs(0), out.attrs(1)
	for k, want := range map[string]string{"msg": "finished call", "level": "WARN", "grpc.code": "Unavailable",
		"grpc.error": "rpc error: code = Unavailable desc = store unavailable; retry", "grpc.method": "Claim",
		"grpc.service": "dedup.v1.DedupService", "consumer": "inventory", "grpc.time_ms": "1"} {
		if failed[k] != want {
			t.Errorf("failed call: %s = %q, want %q (line %v)", k, failed[k], want, failed)
		}
	}
	for k, want := range map[string]string{"msg": "slow call", "level": "WARN", "grpc.code": "OK", "grpc.time_ms": "250"} {
		if slow[k] != want {
			t.Errorf("slow call: %s = %q, want %q (line %v)", k, slow[k], want, slow)
		}
	}
}

// Failed calls of one method and code are rate-limited, and the line after
// a gap says how many were dropped; another code has its own allowance.
func TestFailedCallsAreRateLimited(t *testing.T) {
	out := &lines{level: slog.LevelInfo}
	c := &clock{now: time.Unix(1000, 0)}
	l := New(slog.New(out), Options{Now: c.Now, Failed: loglimit.NewWithClock(1, 3, c.Now)})
	unavailable := status.Error(codes.Unavailable, "down")
	for range 10 {
		call(t, l, c, "inventory", 0, unavailable)
	}
	call(t, l, c, "inventory", 0, status.Error(codes.Internal, "bug"))
	if len(out.records) != 4 {
		t.Fatalf("%d lines for 10 failures of one kind and 1 of another, want 3 + 1", len(out.records))
	}
	c.now = c.now.Add(time.Second)
	call(t, l, c, "inventory", 0, unavailable)
	if got := out.attrs(4)["dropped"]; got != "7" {
		t.Fatalf("line after the gap says dropped=%q, want 7", got)
	}
}

// Asked for all calls (or at DEBUG), every call gets a line, as before.
func TestAllCallsWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
		all   bool
	}{{"--log-all-calls", slog.LevelInfo, true}, {"debug level", slog.LevelDebug, false}} {
		out := &lines{level: tc.level}
		c := &clock{now: time.Unix(1000, 0)}
		l := New(slog.New(out), Options{All: tc.all, Now: c.Now})
		call(t, l, c, "inventory", time.Millisecond, nil)
		if len(out.records) != 1 || out.attrs(0)["grpc.code"] != "OK" || out.attrs(0)["level"] != "INFO" {
			t.Errorf("%s: %d lines for one fast call, want one at INFO", tc.name, len(out.records))
		}
	}
}

// A failed call's line is not built when its level is off.
func TestFailedCallBelowLevelIsNotLogged(t *testing.T) {
	out := &lines{level: slog.LevelWarn}
	c := &clock{now: time.Unix(1000, 0)}
	l := New(slog.New(out), Options{Now: c.Now})
	call(t, l, c, "inventory", 0, status.Error(codes.InvalidArgument, "bad key")) // INFO
	if len(out.records) != 0 {
		t.Fatalf("an INFO line was written at WARN: %v", out.attrs(0))
	}
}

// The consumer is logged before validation, so a name of a megabyte must
// not become a log line of a megabyte; nor may error text.
func TestLoggedValuesAreBounded(t *testing.T) {
	cases := []struct{ name, want string }{
		{"inventory", "inventory"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("b", 1<<20), strings.Repeat("b", 128) + "…"},
	}
	for _, tc := range cases {
		out := &lines{level: slog.LevelInfo}
		c := &clock{now: time.Unix(1000, 0)}
		l := New(slog.New(out), Options{Now: c.Now})
		call(t, l, c, tc.name, 0, status.Error(codes.PermissionDenied, "not for "+tc.name))
		got := out.attrs(0)
		if got["consumer"] != tc.want {
			t.Errorf("consumer of %d bytes logged as %d bytes, want %d", len(tc.name), len(got["consumer"]), len(tc.want))
		}
		if n := len(got["grpc.error"]); n > clip.MaxLogged+len(clip.Marker) {
			t.Errorf("error text logged as %d bytes", n)
		}
	}
}

// A claim's wait, asked for and granted (up to MaxWait), is not slowness:
// the threshold counts the time beyond it. A wait asked past MaxWait is
// allowed only MaxWait, and a stream is never slow however long it stays
// open (grpcurl's reflection stream). Times are the test's clock.
func TestSlowCountsTimeBeyondTheWaitAsked(t *testing.T) {
	const slow = 250 * time.Millisecond
	wait := durationpb.New
	for _, tc := range []struct {
		name     string
		req      any
		took     time.Duration
		wantSlow bool
	}{
		{"no wait, fast", &dedupv1.ClaimRequest{}, 249 * time.Millisecond, false},
		{"no wait, slow", &dedupv1.ClaimRequest{}, slow, true},
		{"waited as asked", &dedupv1.ClaimRequest{Wait: wait(2 * time.Second)}, 2 * time.Second, false},
		{"waited, then slow", &dedupv1.ClaimRequest{Wait: wait(2 * time.Second)}, 2*time.Second + slow, true},
		{"wait past MaxWait counts as MaxWait", &dedupv1.ClaimRequest{Wait: wait(time.Hour)}, 10*time.Second + slow, true},
		{"stream claim", &dedupv1.ClaimStreamRequest{Wait: wait(time.Second)}, time.Second, false},
		{"batch: the longest item's wait", &dedupv1.ClaimBatchRequest{Items: []*dedupv1.ClaimBatchItem{
			{Wait: wait(time.Second)}, {Wait: wait(3 * time.Second)}}}, 3 * time.Second, false},
		{"negative wait", &dedupv1.ClaimRequest{Wait: wait(-time.Hour)}, slow, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &lines{level: slog.LevelInfo}
			c := &clock{now: time.Unix(1000, 0)}
			l := New(slog.New(out), Options{Slow: slow, MaxWait: 10 * time.Second, Now: c.Now})
			info := &grpc.UnaryServerInfo{FullMethod: "/dedup.v1.DedupService/Claim"}
			_, _ = l.UnaryServerInterceptor()(context.Background(), tc.req, info, func(context.Context, any) (any, error) {
				c.now = c.now.Add(tc.took)
				return nil, nil
			})
			if got := len(out.records) == 1; got != tc.wantSlow {
				t.Fatalf("took %v: logged slow %v, want %v", tc.took, got, tc.wantSlow)
			}
		})
	}
	out := &lines{level: slog.LevelInfo}
	c := &clock{now: time.Unix(1000, 0)}
	l := New(slog.New(out), Options{Slow: slow, Now: c.Now})
	info := &grpc.StreamServerInfo{FullMethod: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", IsClientStream: true, IsServerStream: true}
	_ = l.StreamServerInterceptor()(nil, fakeStream{}, info, func(any, grpc.ServerStream) error {
		c.now = c.now.Add(time.Hour)
		return nil
	})
	if len(out.records) != 0 {
		t.Fatalf("an hour-long reflection stream was logged: %v", out.attrs(0))
	}
}

// fakeStream is a server stream with only a context.
type fakeStream struct{ grpc.ServerStream }

func (fakeStream) Context() context.Context { return context.Background() }

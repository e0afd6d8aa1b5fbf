package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestRateLimitIsPerConsumerWithRetryHint: with one call per 1000 s and a
// burst of 2, a consumer's third call is refused with RATE_LIMITED and a
// retry hint near 1000 s, while another consumer still has its own burst.
// The rate is that low so that no refill can happen during the test.
func TestRateLimitIsPerConsumerWithRetryHint(t *testing.T) {
	cfg := testConfig()
	cfg.RateLimit, cfg.RateBurst = 0.001, 2
	srv := startGuarded(t, cfg, nil)
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	lookup := func(consumer string) error {
		_, err := c.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: consumer, Key: "k"})
		return err
	}
	for i := range 2 {
		if err := lookup("inventory"); status.Code(err) != codes.NotFound {
			t.Fatalf("call %d within the burst: %v, want NOT_FOUND", i+1, err)
		}
	}
	err := lookup("inventory")
	if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != rpcerrors.ReasonRateLimited {
		t.Fatalf("call over the rate: %v (reason %q), want RESOURCE_EXHAUSTED / RATE_LIMITED", err, reasonOf(err))
	}
	if d := retryDelay(err); d < 900*time.Second || d > 1000*time.Second {
		t.Fatalf("RetryInfo delay = %v, want about 1000s", d)
	}
	if err := lookup("payments"); status.Code(err) != codes.NotFound {
		t.Fatalf("another consumer: %v, want its own burst", err)
	}
	// AdminService is not limited, even for a request naming the consumer.
	admin := dedupv1.NewAdminServiceClient(srv.dial(t))
	for range 3 {
		_, err := admin.DeleteRecord(context.Background(), &dedupv1.DeleteRecordRequest{Consumer: "inventory", Key: "k"})
		if status.Code(err) != codes.NotFound || reasonOf(err) != rpcerrors.ReasonNotFound {
			t.Fatalf("AdminService call: %v, want it to reach the handler (RECORD_NOT_FOUND)", err)
		}
	}
}

// blockingStore holds every Lookup until released.
type blockingStore struct {
	store.Backend
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Backend.Lookup(ctx, consumer, key)
}

// TestInFlightBoundShedsAtOnce: with --max-inflight 2 and two calls held
// inside the store, the next call is refused with OVERLOADED without
// waiting, health still answers, and once the held calls finish calls are
// accepted again.
func TestInFlightBoundShedsAtOnce(t *testing.T) {
	sq, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &blockingStore{Backend: sq, entered: make(chan struct{}, 2), release: make(chan struct{})}
	cfg := testConfig()
	cfg.MaxInFlight = 2
	srv := startGuarded(t, cfg, st)
	conn := srv.dial(t)
	c := dedupv1.NewDedupServiceClient(conn)
	lookup := func() error {
		_, err := c.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: "c", Key: "k"})
		return err
	}

	held := make(chan error, 2)
	for range 2 {
		go func() { held <- lookup() }()
		<-st.entered
	}
	err = lookup()
	if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != rpcerrors.ReasonOverloaded {
		t.Fatalf("call over the bound: %v (reason %q), want RESOURCE_EXHAUSTED / OVERLOADED", err, reasonOf(err))
	}
	if resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health while overloaded: %v, %v; want an answer", resp, err)
	}
	close(st.release)
	for range 2 {
		if err := <-held; status.Code(err) != codes.NotFound {
			t.Fatalf("held call: %v, want NOT_FOUND", err)
		}
	}
	if err := lookup(); status.Code(err) != codes.NotFound {
		t.Fatalf("after the held calls finished: %v, want NOT_FOUND", err)
	}
	if n := srv.guards.inflight.Running(); n != 0 {
		t.Fatalf("%d calls counted in flight after all finished", n)
	}

	// Reflection streams stay open while a tool is connected; they take no
	// slot, so two of them leave both slots to real calls.
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Send(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Recv(); err != nil {
			t.Fatalf("reflection: %v", err)
		}
	}
	if n := srv.guards.inflight.Running(); n != 0 {
		t.Fatalf("open reflection streams hold %d in-flight slots, want 0", n)
	}
	if err := lookup(); status.Code(err) != codes.NotFound {
		t.Fatalf("with reflection streams open: %v, want NOT_FOUND", err)
	}
}

// TestBatchTakesOneTokenPerItem: with a burst of 3 and one token per
// 1000 s, a batch of 5 gets its first 3 items through and the last 2
// RATE_LIMITED, each with a retry hint; the next lone call is refused, the
// bucket being empty; and a batch is never refused whole for its rate.
func TestBatchTakesOneTokenPerItem(t *testing.T) {
	cfg := testConfig()
	cfg.RateLimit, cfg.RateBurst = 0.001, 3
	srv := startGuarded(t, cfg, nil)
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	ctx := context.Background()
	items := []*dedupv1.ClaimBatchItem{{Key: "a"}, {Key: "b"}, {Key: "c"}, {Key: "d"}, {Key: "e"}}
	resp, err := c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "inventory", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range resp.GetResults() {
		if i < 3 {
			if res.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
				t.Errorf("item %d within the burst: %v, want ACQUIRED", i, res)
			}
			continue
		}
		err := status.FromProto(res.GetError()).Err()
		if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != rpcerrors.ReasonRateLimited {
			t.Errorf("item %d past the burst: %v, want RATE_LIMITED", i, err)
		}
		if d := retryDelay(err); d < 900*time.Second || d > 2000*time.Second {
			t.Errorf("item %d: RetryInfo delay %v, want about 1000-2000s", i, d)
		}
	}
	_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "inventory", Key: "a"})
	if reasonOf(err) != rpcerrors.ReasonRateLimited {
		t.Errorf("lone call after the batch used the burst: %v, want RATE_LIMITED", err)
	}
	resp, err = c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "inventory", Items: items[:1]})
	if err != nil || reasonOf(status.FromProto(resp.GetResults()[0].GetError()).Err()) != rpcerrors.ReasonRateLimited {
		t.Errorf("batch with no tokens left: %v, %v; want its item RATE_LIMITED", resp, err)
	}
}

// openStuckCalls opens n Lookup calls on a raw HTTP/2 connection, each its
// headers and no request: each waits for its request, as a slow or hostile
// client's would. It returns the connection's framer, to read the answers.
func openStuckCalls(t *testing.T, addr string, n int) (*http2.Framer, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := range n {
		block.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
			{":path", "/dedup.v1.DedupService/Lookup"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
				t.Fatal(err)
			}
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	return fr, c
}

// readRefusals reads fr until n calls have been answered and returns their
// statuses by stream.
func readRefusals(t *testing.T, fr *http2.Framer, c net.Conn, n int) map[uint32]*status.Status {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(answerDeadline)); err != nil {
		t.Fatal(err)
	}
	got := map[uint32]*status.Status{}
	for len(got) < n {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d of %d answers: %v", len(got), n, err)
		}
		h, ok := f.(*http2.MetaHeadersFrame)
		if !ok {
			continue
		}
		code, err := strconv.Atoi(h.PseudoValue("status")) // :status
		if err != nil || code != 200 {
			t.Fatalf("stream %d: HTTP status %q", h.StreamID, h.PseudoValue("status"))
		}
		var st spb.Status
		if details := headerValue(h, "grpc-status-details-bin"); details != "" {
			raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(details, "="))
			if err != nil || proto.Unmarshal(raw, &st) != nil {
				t.Fatalf("stream %d: undecodable status details %q", h.StreamID, details)
			}
		} else {
			grpcCode, _ := strconv.Atoi(headerValue(h, "grpc-status"))
			st.Code = int32(grpcCode)
		}
		got[h.StreamID] = status.FromProto(&st)
	}
	return got
}

func headerValue(h *http2.MetaHeadersFrame, name string) string {
	for _, f := range h.RegularFields() {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// TestCallsWaitingBehindTheBoundAreCounted: with the two in-flight slots
// held and room for three calls waiting, ten calls that never send their
// request are opened: three wait, and the other seven are refused
// OVERLOADED at once, with their ErrorInfo, before their request is read;
// a normal call is then refused OVERLOADED too. When the held calls
// finish, calls run again. Without the count from arrival no call is
// answered at all: all ten wait for their requests.
func TestCallsWaitingBehindTheBoundAreCounted(t *testing.T) {
	sq, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &blockingStore{Backend: sq, entered: make(chan struct{}, 2), release: make(chan struct{})}
	cfg := testConfig()
	cfg.MaxInFlight, cfg.MaxWaiting = 2, 3
	srv := startGuarded(t, cfg, st)
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
	defer cancel()
	lookup := func() error {
		_, err := c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "c", Key: "k"})
		return err
	}
	held := make(chan error, 2)
	for range 2 {
		go func() { held <- lookup() }()
		<-st.entered
	}

	fr, raw := openStuckCalls(t, srv.addr, 10)
	refused := readRefusals(t, fr, raw, 7)
	for id, s := range refused {
		if s.Code() != codes.ResourceExhausted || reasonOf(s.Err()) != rpcerrors.ReasonOverloaded {
			t.Errorf("stream %d: %v, want RESOURCE_EXHAUSTED / OVERLOADED", id, s.Err())
		}
		if id <= 5 {
			t.Errorf("stream %d, one of the first three, was refused: they fit in the waiting room", id)
		}
	}
	if err := lookup(); status.Code(err) != codes.ResourceExhausted || reasonOf(err) != rpcerrors.ReasonOverloaded {
		t.Fatalf("call with the slots held and three waiting: %v, want RESOURCE_EXHAUSTED / OVERLOADED", err)
	}
	if resp, err := healthpb.NewHealthClient(srv.dial(t)).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health while overloaded: %v, %v; want an answer", resp, err)
	}
	raw.Close() // the three waiting calls end with their connection
	close(st.release)
	for range 2 {
		if err := <-held; status.Code(err) != codes.NotFound {
			t.Fatalf("held call: %v, want NOT_FOUND", err)
		}
	}
	for err := lookup(); status.Code(err) != codes.NotFound; err = lookup() {
		// The server may not have seen the raw connection close yet (the
		// waiting calls still count); only OVERLOADED may say so.
		if reasonOf(err) != rpcerrors.ReasonOverloaded {
			t.Fatalf("after the held calls finished: %v, want NOT_FOUND", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestHTTPOverloadRefusedOnArrival: the in-flight bound counts HTTP calls
// as they arrive, with the gRPC listener's: with room for one call and a
// gRPC call open (its request not sent), an HTTP call is refused at once,
// RESOURCE_EXHAUSTED / OVERLOADED, HTTP 429, and stores nothing.
func TestHTTPOverloadRefusedOnArrival(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight, cfg.MaxWaiting = 1, 0
	grpcAddr, base := runHTTPServer(t, cfg)
	cancel := holdTheSlot(t, grpcAddr)
	defer cancel()
	const refused = "k-refused"
	a := postJSON(t, base, "/dedup.v1.DedupService/Claim", "", `{"consumer":"c","key":"`+refused+`"}`, false)
	if e := a.connectErr(t); a.status != http.StatusTooManyRequests || e.Code != "resource_exhausted" || e.reason() != "OVERLOADED" {
		t.Fatalf("HTTP %d %+v beside the held call, want 429 OVERLOADED", a.status, e)
	}
	// A gRPC-Web caller is refused in its own protocol.
	web := connect.NewClient[dedupv1.ClaimRequest, dedupv1.ClaimResponse](http.DefaultClient,
		base+"/dedup.v1.DedupService/Claim", connect.WithGRPCWeb())
	_, err := web.CallUnary(context.Background(), connect.NewRequest(&dedupv1.ClaimRequest{Consumer: "c", Key: "web"}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || connectReason(err) != "OVERLOADED" {
		t.Fatalf("gRPC-Web claim beside the held call: %v, want RESOURCE_EXHAUSTED OVERLOADED", err)
	}
	cancel() // the slot comes back once the server sees the held call end
	lookup := dedupv1.NewDedupServiceClient(dialServer(t, grpcAddr))
	for {
		_, err := lookup.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: "c", Key: refused})
		if status.Code(err) == codes.ResourceExhausted {
			continue
		}
		if status.Code(err) != codes.NotFound {
			t.Fatalf("Lookup of the refused claim's key: %v, want NOT_FOUND", err)
		}
		return
	}
}

// TestHTTPArrivalsEndWithTheirRequest: a call counted on arrival and then
// refused before it reaches the gRPC server (a body that does not decode,
// one over the bound, an empty one) gives its count back: with room for
// one call, a valid call after many of them is served.
func TestHTTPArrivalsEndWithTheirRequest(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight, cfg.MaxWaiting = 1, 0
	_, base := runHTTPServer(t, cfg)
	huge := `{"consumer":"c","key":"` + strings.Repeat("k", int(httpBodyBytes(cfg))) + `"}`
	for i := range 20 {
		body := []string{`{"consumer":`, huge, ``}[i%3]
		a := postJSON(t, base, "/dedup.v1.DedupService/Claim", "", body, false)
		if e := a.connectErr(t); e.Code != "invalid_argument" && e.Code != "resource_exhausted" {
			t.Fatalf("call %d: %+v", i, e)
		}
	}
	// A count goes back when its request's context ends, which may be a
	// moment after the answer: a leaked one would refuse every attempt.
	for range 1000 {
		a := postJSON(t, base, "/dedup.v1.DedupService/Claim", "", `{"consumer":"c","key":"k"}`, false)
		if a.status == http.StatusTooManyRequests {
			continue
		}
		var ok struct{ Outcome string }
		a.ok(t, &ok)
		if ok.Outcome != "OUTCOME_ACQUIRED" {
			t.Fatalf("after the refused calls: %+v", ok)
		}
		return
	}
	t.Fatal("every call after the refused ones was refused OVERLOADED: their arrivals were not given back")
}

// connectReason is the ErrorInfo reason of a connect-go client's error.
func connectReason(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.GetReason()
			}
		}
	}
	return ""
}

// holdTheSlot opens a gRPC call that never sends its request, so it holds
// the one in-flight slot of a server with --max-inflight 1 and
// --max-waiting 0, and returns once it does: a Lookup on another
// connection is then refused. A probe that is running when the held call
// arrives gets the slot instead and the held call is refused; it is then
// opened again. Cancelling the returned function ends the held call.
func holdTheSlot(t *testing.T, grpcAddr string) context.CancelFunc {
	t.Helper()
	probe := dedupv1.NewDedupServiceClient(dialServer(t, grpcAddr))
	holder := dialServer(t, grpcAddr)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		st, err := holder.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
			"/dedup.v1.DedupService/Claim")
		if err != nil {
			t.Fatal(err)
		}
		refused := make(chan error, 1)
		go func() { refused <- st.RecvMsg(&dedupv1.ClaimResponse{}) }()
		for again := false; !again; {
			_, err := probe.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: "c", Key: "probe"})
			switch status.Code(err) {
			case codes.ResourceExhausted: // only the held call can hold the slot now
				return cancel
			case codes.NotFound:
			default:
				t.Fatalf("Lookup while the held call arrives: %v", err)
			}
			select {
			case err := <-refused: // the probe had the slot when it arrived: again
				if status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("the held call ended with %v, want RESOURCE_EXHAUSTED", err)
				}
				again = true
			default:
			}
		}
		cancel()
	}
}

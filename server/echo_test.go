package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// TestHugeValuesAreNotEchoed: a consumer of 16 MB and a key of 10 KiB,
// with and without a token, come back in no answer and no log line beyond
// a few hundred bytes. The bounds are the documented ones: clip.MaxEchoed per
// echoed value on the wire, 128 bytes per logged value.
//
// Each case has a server of its own and runs in parallel with the others:
// sending 16 MB is mostly waiting on HTTP/2 flow control (window updates),
// which on a busy machine took 15-20 s a case one after the other.
func TestHugeValuesAreNotEchoed(t *testing.T) {
	huge := strings.Repeat("Q", 16<<20)
	longKey := strings.Repeat("K", 10<<10)

	type clients struct {
		dedup dedupv1.DedupServiceClient
		admin dedupv1.AdminServiceClient
	}
	cases := []struct {
		name  string
		token string
		call  func(c clients, token string) error
		code  codes.Code
	}{
		{"uncovered huge consumer", inventoryToken, func(c clients, tok string) error {
			_, err := c.dedup.Lookup(withToken(tok), &dedupv1.LookupRequest{Consumer: huge, Key: "k"})
			return err
		}, codes.InvalidArgument},
		{"huge consumer without a token", "", func(c clients, tok string) error {
			_, err := c.dedup.Lookup(withToken(tok), &dedupv1.LookupRequest{Consumer: huge, Key: "k"})
			return err
		}, codes.Unauthenticated},
		{"huge consumer on AdminService without admin", allToken, func(c clients, tok string) error {
			_, err := c.admin.GetPolicy(withToken(tok), &dedupv1.GetPolicyRequest{Consumer: huge})
			return err
		}, codes.PermissionDenied},
		{"huge consumer covered by *", allToken, func(c clients, tok string) error {
			_, err := c.dedup.Lookup(withToken(tok), &dedupv1.LookupRequest{Consumer: huge, Key: "k"})
			return err
		}, codes.InvalidArgument},
		{"10 KiB key", inventoryToken, func(c clients, tok string) error {
			_, err := c.dedup.Lookup(withToken(tok), &dedupv1.LookupRequest{Consumer: "inventory", Key: longKey})
			return err
		}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &dedupdproc.LogBuffer{}
			cfg := testConfig()
			cfg.AuthTokens = standardAuthFile(t)
			srv := startGuardedWithLog(t, cfg, nil, slog.New(slog.NewJSONHandler(logs, nil)))
			conn := srv.dial(t, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(32<<20)),
				grpc.WithTransportCredentials(insecure.NewCredentials()))
			c := clients{dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn)}
			before := len(logs.String())
			st := status.Convert(tc.call(c, tc.token))
			if st.Code() != tc.code {
				t.Fatalf("code = %v (%.200s), want %v", st.Code(), st.Message(), tc.code)
			}
			if rpcerrors.Info(st) == nil {
				t.Fatal("the answer lost its ErrorInfo")
			}
			// 4 echoed values at most (message, consumer, key, field) of
			// clip.MaxEchoed each, plus framing.
			if n := proto.Size(st.Proto()); n > 4*clip.MaxEchoed+512 {
				t.Fatalf("the answer is %d bytes", n)
			}
			line := logs.String()[before:]
			if strings.Contains(line, strings.Repeat("Q", 129)) || strings.Contains(line, strings.Repeat("K", 129)) {
				t.Fatalf("a log line repeats more than 128 bytes of the caller's value: %.300s", line)
			}
			if len(line) > 2048 {
				t.Fatalf("the call logged %d bytes: %.300s", len(line), line)
			}
		})
	}
}

// TestConflictReachesASmallTrailerClient: a client that accepts no more
// than 8 KiB of metadata, as gRPC's C core (the Python client) by default,
// gets DIGEST_MISMATCH on a record with a 60 KiB result, not INTERNAL:
// RST_STREAM, because the conflict's record leaves the result out.
func TestConflictReachesASmallTrailerClient(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxResultBytes = 64 << 10
	srv := startGuarded(t, cfg, nil)
	c := dedupv1.NewDedupServiceClient(srv.dial(t, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithMaxHeaderListSize(8<<10)))
	ctx := context.Background()
	got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k", Digest: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "inventory", Key: "k",
		FencingToken: got.GetFencingToken(), Result: make([]byte, 60<<10)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "k", Digest: []byte("b")})
	if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != rpcerrors.ReasonDigestMismatch {
		t.Fatalf("Claim with another digest = %v, want FAILED_PRECONDITION / DIGEST_MISMATCH", err)
	}
}

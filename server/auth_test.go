package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

const (
	inventoryToken = "tok-inventory-0123456789"
	allToken       = "tok-all-0123456789"
	adminToken     = "tok-admin-0123456789"
)

func authFile(t *testing.T, content string) string {
	t.Helper()
	return writeTemp(t, t.TempDir(), "auth.yaml", []byte(content))
}

func standardAuthFile(t *testing.T) string {
	return authFile(t, fmt.Sprintf(`tokens:
  - {name: inventory, sha256: %s, consumers: [inventory]}
  - {name: all, sha256: %s, consumers: ["*"]}
  - {name: admin, sha256: %s, admin: true}
`, sha256Hex(inventoryToken), sha256Hex(allToken), sha256Hex(adminToken)))
}

// TestAuthDecidesEveryCall: who may call what, with the code and reason
// each refusal carries. A call that passes auth reaches its handler, which
// answers: NOT_FOUND (Lookup of an unknown key), OK (an empty listing, the
// stats of an empty store), or INVALID_FIELD (a purge naming nothing).
func TestAuthDecidesEveryCall(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	srv := startGuarded(t, cfg, nil)
	conn := srv.dial(t)
	dedup, admin := dedupv1.NewDedupServiceClient(conn), dedupv1.NewAdminServiceClient(conn)

	lookup := func(ctx context.Context, consumer string) error {
		_, err := dedup.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: "k"})
		return err
	}
	list := func(ctx context.Context, consumer string) error {
		_, err := dedup.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer})
		return err
	}
	claimBatch := func(ctx context.Context, consumer string) error {
		_, err := dedup.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: consumer,
			Items: []*dedupv1.ClaimBatchItem{{Key: "a"}, {Key: "b"}}})
		return err
	}
	lookupBatch := func(ctx context.Context, consumer string) error {
		_, err := dedup.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: consumer, Keys: []string{"a"}})
		return err
	}
	stats := func(ctx context.Context, _ string) error {
		_, err := admin.Stats(ctx, &dedupv1.StatsRequest{})
		return err
	}
	purge := func(ctx context.Context, _ string) error { // a server stream
		s, err := admin.Purge(ctx, &dedupv1.PurgeRequest{})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	cases := []struct {
		name     string
		call     func(context.Context, string) error
		token    string
		consumer string
		code     codes.Code
		reason   string
	}{
		{"no token", lookup, "", "inventory", codes.Unauthenticated, rpcerrors.ReasonUnauthenticated},
		{"unknown token", lookup, "tok-guess", "inventory", codes.Unauthenticated, rpcerrors.ReasonUnauthenticated},
		{"covered consumer", lookup, inventoryToken, "inventory", codes.NotFound, rpcerrors.ReasonNotFound},
		{"uncovered consumer", lookup, inventoryToken, "payments", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"star covers any", lookup, allToken, "payments", codes.NotFound, rpcerrors.ReasonNotFound},
		{"admin token is no consumer token", lookup, adminToken, "inventory", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"list uncovered", list, inventoryToken, "payments", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"list covered", list, inventoryToken, "inventory", codes.OK, ""},
		{"batch uncovered", claimBatch, inventoryToken, "payments", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"batch covered", claimBatch, inventoryToken, "inventory", codes.OK, ""},
		{"lookup batch uncovered", lookupBatch, inventoryToken, "payments", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"admin without token", stats, "", "", codes.Unauthenticated, rpcerrors.ReasonUnauthenticated},
		{"admin with consumer token", stats, allToken, "", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"admin with admin token", stats, adminToken, "", codes.OK, ""},
		{"admin stream with consumer token", purge, allToken, "", codes.PermissionDenied, rpcerrors.ReasonPermissionDenied},
		{"admin stream with admin token", purge, adminToken, "", codes.InvalidArgument, rpcerrors.ReasonInvalidField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(withToken(tc.token), tc.consumer)
			if status.Code(err) != tc.code || reasonOf(err) != tc.reason {
				t.Fatalf("got %v (reason %q), want %v (reason %q)", err, reasonOf(err), tc.code, tc.reason)
			}
			if tc.token != "" && err != nil && strings.Contains(err.Error(), tc.token) {
				t.Fatalf("the error repeats the token: %v", err)
			}
		})
	}

	// Health needs no token.
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a token = %v, %v; want SERVING", resp, err)
	}
}

// TestAuthReloadSwapsRulesWithoutDroppingCalls: calls run on many
// goroutines while the file changes and is reloaded. Each call gets the
// old decision or the new one, never another error; once reloaded, only
// the new one. A broken file then leaves the new rules in force.
func TestAuthReloadSwapsRulesWithoutDroppingCalls(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	srv := startGuarded(t, cfg, nil)
	dedup := dedupv1.NewDedupServiceClient(srv.dial(t))
	lookup := func() error {
		_, err := dedup.Lookup(withToken(inventoryToken), &dedupv1.LookupRequest{Consumer: "inventory", Key: "k"})
		return err
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := lookup()
				if c := status.Code(err); c != codes.NotFound && c != codes.PermissionDenied {
					errs <- err
					return
				}
			}
		})
	}
	// The inventory token now covers payments only.
	rewrite(t, cfg.AuthTokens, fmt.Sprintf("tokens: [{sha256: %s, consumers: [payments]}]\n", sha256Hex(inventoryToken)))
	for range 20 { // reload repeatedly while calls run
		if err := srv.reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call during reload got %v; want the old or the new decision", err)
	}
	if err := lookup(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("after reload: %v, want PERMISSION_DENIED", err)
	}

	rewrite(t, cfg.AuthTokens, "tokens: [{sha256: nothex}]\n")
	if err := srv.reload(); err == nil {
		t.Fatal("reload of a broken file succeeded")
	}
	_, err := dedup.Lookup(withToken(inventoryToken), &dedupv1.LookupRequest{Consumer: "payments", Key: "k"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("after a failed reload: %v, want the rules in force (NOT_FOUND for payments)", err)
	}
}

// writeTemp writes data to a file in dir and returns its path.
func writeTemp(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rewrite replaces a file atomically, as an operator's tooling should.
func rewrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".next")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

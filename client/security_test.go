package client_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The tokens of the security tests' auth file: one per consumer, and an
// admin token.
const (
	inventoryToken = "tok-inventory-0b7e51c2"
	adminToken     = "tok-admin-9a4d03f8"
)

var securityTokens = []dedupdtest.Token{
	{Token: inventoryToken, Consumers: []string{"inventory"}},
	{Token: adminToken, Admin: true},
}

// wantRefusal checks err is the typed error of a server refusal with this
// sentinel, gRPC code and ErrorInfo reason.
func wantRefusal(t *testing.T, err, sentinel error, code codes.Code, reason string) {
	t.Helper()
	var e *client.Error
	if !errors.Is(err, sentinel) || !errors.As(err, &e) || e.Code != code || e.Reason != reason {
		t.Fatalf("err = %v; want %v with code %v and reason %s", err, sentinel, code, reason)
	}
}

// TestAuthTokensAgainstDedupd: a real dedupd with --auth-tokens, reached in
// plaintext on loopback (where the client allows a token): the token
// covers its consumer only, no or an unknown token is UNAUTHENTICATED, and
// a consumer token may not call AdminService.
func TestAuthTokensAgainstDedupd(t *testing.T) {
	auth := dedupdtest.AuthFile(t, securityTokens, "")
	addr := dedupdtest.Start(t, dedupdtest.Embedded, "--auth-tokens", auth)
	ctx := testContext(t)

	inventory := newClient(t, addr, client.WithBearerToken(inventoryToken))
	claim, err := inventory.Claim(ctx, "inventory", "auth-1", nil, client.ClaimOptions{})
	if err != nil || claim.Outcome != client.Acquired {
		t.Fatalf("Claim with a covering token = %+v, %v; want ACQUIRED", claim, err)
	}
	if _, err := inventory.Complete(ctx, "inventory", "auth-1", claim.FencingToken, []byte("ok")); err != nil {
		t.Fatalf("Complete with a covering token: %v", err)
	}

	_, err = inventory.Claim(ctx, "payments", "auth-1", nil, client.ClaimOptions{})
	wantRefusal(t, err, client.ErrPermissionDenied, codes.PermissionDenied, "PERMISSION_DENIED")
	// Admin() is the generated client: its errors are plain gRPC statuses.
	if _, err := inventory.Admin().Stats(ctx, &dedupv1.StatsRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Stats with a consumer token = %v; want PERMISSION_DENIED", err)
	}

	for name, opts := range map[string][]client.Option{
		"no token":      nil,
		"unknown token": {client.WithBearerToken("tok-nobody")},
	} {
		c := newClient(t, addr, opts...)
		_, err := c.Lookup(ctx, "inventory", "auth-1")
		t.Run(name, func(t *testing.T) {
			wantRefusal(t, err, client.ErrUnauthenticated, codes.Unauthenticated, "UNAUTHENTICATED")
		})
	}

	admin := newClient(t, addr, client.WithBearerToken(adminToken))
	if _, err := admin.Admin().Stats(ctx, &dedupv1.StatsRequest{}); err != nil {
		t.Fatalf("GetStats with the admin token: %v", err)
	}
}

// TestTLSWithTokenAgainstDedupd: dedupd serving TLS with --auth-tokens;
// the client trusts the test CA and sends its token, and Do runs the
// two-phase pattern over that connection. A client that does not trust
// the CA, or speaks plaintext, never gets a call through.
func TestTLSWithTokenAgainstDedupd(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	auth := dedupdtest.AuthFile(t, securityTokens, "")
	addr := dedupdtest.Start(t, dedupdtest.Embedded, append(pki.TLSFlags(false), "--auth-tokens", auth)...)
	ctx := testContext(t)

	cfg, err := client.LoadTLSConfig(pki.CA, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, addr, client.WithTLS(cfg), client.WithBearerToken(inventoryToken))
	runs := 0
	work := func(context.Context, client.Attempt) ([]byte, error) { runs++; return []byte("done"), nil }
	for range 2 {
		res, err := c.Do(ctx, "inventory", "tls-do", client.Digest([]byte("req")), client.DoOptions{}, work)
		if err != nil || string(res.Result) != "done" {
			t.Fatalf("Do over TLS with a token = %+v, %v", res, err)
		}
	}
	if runs != 1 {
		t.Fatalf("fn ran %d times over two Do calls; want once", runs)
	}
	_, err = c.Lookup(ctx, "payments", "tls-do")
	wantRefusal(t, err, client.ErrPermissionDenied, codes.PermissionDenied, "PERMISSION_DENIED")

	untrusting, err := client.LoadTLSConfig("", "", "") // system roots only
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]client.Option{
		"CA not trusted": {client.WithTLS(untrusting), client.WithBearerToken(inventoryToken)},
		"plaintext":      {client.WithBearerToken(inventoryToken)},
	} {
		_, err := newClient(t, addr, append(opts, client.WithRetries(0))...).Lookup(ctx, "inventory", "tls-do")
		if !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("%s: Lookup = %v; want the connection to fail (ErrUnavailable)", name, err)
		}
	}
}

// TestMutualTLSAgainstDedupd: dedupd requiring client certificates; the
// auth file lists the test client certificate's subject for consumer
// inventory, so the client needs no token. Its certificate covers
// inventory only, and a client without a certificate cannot connect.
func TestMutualTLSAgainstDedupd(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	auth := dedupdtest.AuthFile(t, securityTokens, pki.ClientSubject, "inventory")
	addr := dedupdtest.Start(t, dedupdtest.Embedded, append(pki.TLSFlags(true), "--auth-tokens", auth)...)
	ctx := testContext(t)

	cfg, err := client.LoadTLSConfig(pki.CA, pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, addr, client.WithTLS(cfg))
	claim, err := c.Claim(ctx, "inventory", "mtls-1", nil, client.ClaimOptions{})
	if err != nil || claim.Outcome != client.Acquired {
		t.Fatalf("Claim with a listed client certificate = %+v, %v; want ACQUIRED", claim, err)
	}
	_, err = c.Claim(ctx, "payments", "mtls-1", nil, client.ClaimOptions{})
	wantRefusal(t, err, client.ErrPermissionDenied, codes.PermissionDenied, "PERMISSION_DENIED")

	// A token sent with the certificate decides instead of it.
	admin := newClient(t, addr, client.WithTLS(cfg), client.WithBearerToken(adminToken))
	_, err = admin.Lookup(ctx, "inventory", "mtls-1")
	wantRefusal(t, err, client.ErrPermissionDenied, codes.PermissionDenied, "PERMISSION_DENIED")

	noCert, err := client.LoadTLSConfig(pki.CA, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = newClient(t, addr, client.WithTLS(noCert), client.WithBearerToken(inventoryToken), client.WithRetries(0)).
		Lookup(ctx, "inventory", "mtls-1")
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Lookup without a client certificate = %v; want the handshake to fail (ErrUnavailable)", err)
	}
}

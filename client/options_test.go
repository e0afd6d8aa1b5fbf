package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// fakeServer is an in-process DedupService that records what reached it
// and fails the first failures calls with UNAVAILABLE.
type fakeServer struct {
	dedupv1.UnimplementedDedupServiceServer
	calls    atomic.Int64
	failures int64
	auth     atomic.Value // string
	peerCert atomic.Bool
}

func (f *fakeServer) Lookup(ctx context.Context, req *dedupv1.LookupRequest) (*dedupv1.LookupResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth.Store(strings.Join(md.Get("authorization"), ","))
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			f.peerCert.Store(len(info.State.PeerCertificates) > 0)
		}
	}
	if f.calls.Add(1) <= f.failures {
		return nil, status.Error(codes.Unavailable, "try again")
	}
	return &dedupv1.LookupResponse{Record: &dedupv1.Record{Key: req.GetKey()}}, nil
}

func serveFake(t *testing.T, f *fakeServer, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	dedupv1.RegisterDedupServiceServer(s, f)
	go func() { _ = s.Serve(lis) }() // returns once stopped
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestRetriesUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		retries  uint
		failures int64
		wantErr  error
		calls    int64
	}{
		{"recovers", 3, 2, nil, 3},
		{"gives up", 2, 10, client.ErrUnavailable, 3},
		{"retries off", 0, 1, client.ErrUnavailable, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{failures: tt.failures}
			c := newClient(t, serveFake(t, f), client.WithRetries(tt.retries))
			_, err := c.Lookup(testContext(t), "c", "k")
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || f.calls.Load() != tt.calls {
				t.Fatalf("Lookup = %v after %d calls; want %v after %d", err, f.calls.Load(), tt.wantErr, tt.calls)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, serveFake(t, f), client.WithBearerToken("s3cret"))
	if _, err := c.Lookup(testContext(t), "c", "k"); err != nil {
		t.Fatal(err)
	}
	if got := f.auth.Load(); got != "Bearer s3cret" {
		t.Fatalf("server saw authorization %q", got)
	}
	if _, err := client.New("dedupd.example:7070", client.WithBearerToken("s3cret")); err == nil {
		t.Fatal("New sent a bearer token in plaintext to a remote address")
	}
	// A target listing several addresses is loopback only if every one
	// is: the first alone decides nothing (the Python client's bug in
	// issue 11, item 8).
	for target, loopback := range map[string]bool{
		"ipv6:[::1]:1,[::ffff:127.0.0.1]:17071": true,
		"ipv4:127.0.0.1:1,127.0.0.2:2":          true,
		"ipv4:127.0.0.1:1,10.0.0.1:2":           false,
		"ipv6:[::1]:1,[2001:db8::1]:2":          false,
		"ipv6:[::1]:1,[::ffff:10.0.0.1]:2":      false,
	} {
		c, err := client.New(target, client.WithBearerToken("s3cret"))
		if (err == nil) != loopback {
			t.Errorf("New(%q) with a token in plaintext: err = %v; want refused = %v", target, err, !loopback)
		}
		if c != nil {
			c.Close()
		}
	}
}

// TestMutualTLS: LoadTLSConfig's configuration verifies the server and
// presents the client certificate, and the token travels over TLS.
func TestMutualTLS(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	serverCert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	f := &fakeServer{}
	addr := serveFake(t, f, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
	})))

	cfg, err := client.LoadTLSConfig(pki.CA, pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, addr, client.WithTLS(cfg), client.WithBearerToken("t"))
	if _, err := c.Lookup(testContext(t), "c", "k"); err != nil {
		t.Fatal(err)
	}
	if !f.peerCert.Load() || f.auth.Load() != "Bearer t" {
		t.Fatalf("server saw client cert %v, authorization %q", f.peerCert.Load(), f.auth.Load())
	}
	if _, err := client.LoadTLSConfig("", pki.ClientCert, ""); err == nil {
		t.Fatal("LoadTLSConfig accepted a certificate without its key")
	}
}

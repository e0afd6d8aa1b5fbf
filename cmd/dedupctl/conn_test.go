package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/dedupd/dedupd/internal/dedupdconn"
	"github.com/dedupd/dedupd/internal/testing/testpki"
)

// testPKI is a CA with a server certificate for "dedupd.test" (not for
// the loopback address the test dials, so --tls-server-name matters) and a
// client certificate for "operator", written as PEM files.
type testPKI struct {
	caFile, clientCert, clientKey string
	serverCert                    tls.Certificate
	pool                          *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.TestCA(t, "test CA")
	server, err := ca.Server("dedupd.test", "dedupd.test")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client(pkix.Name{CommonName: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{pool: ca.Pool()}
	if p.serverCert, err = server.TLSCertificate(); err != nil {
		t.Fatal(err)
	}
	if p.caFile, err = ca.WriteCert(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	if p.clientCert, p.clientKey, err = client.WriteFiles(dir, "client"); err != nil {
		t.Fatal(err)
	}
	return p
}

// seenCall is what the test server saw of one call.
type seenCall struct {
	authorization []string
	clientCN      string
}

// startHealthServer serves gRPC health on loopback, with TLS when creds is
// set, and records what each call carried.
func startHealthServer(t *testing.T, creds credentials.TransportCredentials) (addr string, seen func() seenCall) {
	t.Helper()
	var mu sync.Mutex
	var last seenCall
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		call := seenCall{authorization: md.Get("authorization")}
		if p, ok := peer.FromContext(ctx); ok {
			if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
				call.clientCN = info.State.PeerCertificates[0].Subject.CommonName
			}
		}
		mu.Lock()
		last = call
		mu.Unlock()
		return h(ctx, req)
	}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(record)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }() // returns once stopped
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), func() seenCall {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func checkHealth(o connOptions) error {
	conn, err := o.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn.Conn()).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestConnTLSAndToken(t *testing.T) {
	pki := newTestPKI(t)
	serverTLS := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pki.serverCert},
		ClientAuth:   tls.VerifyClientCertIfGiven, ClientCAs: pki.pool,
	})
	addr, seen := startHealthServer(t, serverTLS)

	base := connOptions{Flags: dedupdconn.Flags{Server: addr, TLSCA: pki.caFile, TLSServerName: "dedupd.test"}}
	t.Run("token over TLS", func(t *testing.T) {
		o := base
		o.Token = "s3cret"
		if err := checkHealth(o); err != nil {
			t.Fatal(err)
		}
		if got := seen().authorization; len(got) != 1 || got[0] != "Bearer s3cret" {
			t.Errorf("authorization metadata = %q, want [Bearer s3cret]", got)
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		o := base
		o.TLSCert, o.TLSKey = pki.clientCert, pki.clientKey
		if err := checkHealth(o); err != nil {
			t.Fatal(err)
		}
		if got := seen(); got.clientCN != "operator" || len(got.authorization) != 0 {
			t.Errorf("server saw %+v, want client CN operator and no token", got)
		}
	})
	t.Run("server name must match the certificate", func(t *testing.T) {
		o := base
		o.TLSServerName = ""
		if err := checkHealth(o); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("dialing 127.0.0.1 for a dedupd.test certificate: err = %v, want a certificate error", err)
		}
	})
	t.Run("unknown CA is refused", func(t *testing.T) {
		o := base
		o.TLSCA = ""
		o.TLS = true
		if err := checkHealth(o); err == nil {
			t.Fatal("a certificate from an unknown CA was accepted")
		}
	})
}

func TestConnPlaintextToken(t *testing.T) {
	addr, seen := startHealthServer(t, nil)
	if err := checkHealth(connOptions{Flags: dedupdconn.Flags{Server: addr, Token: "tok"}}); err != nil {
		t.Fatal(err)
	}
	if got := seen().authorization; len(got) != 1 || got[0] != "Bearer tok" {
		t.Errorf("authorization metadata = %q, want [Bearer tok]", got)
	}
	if err := checkHealth(connOptions{Flags: dedupdconn.Flags{Server: addr}}); err != nil {
		t.Fatal(err)
	}
	if got := seen().authorization; len(got) != 0 {
		t.Errorf("authorization sent without --token: %q", got)
	}
}

func TestConnOptionErrors(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    connOptions
		want string
	}{
		{"token in the clear to another host", connOptions{Flags: dedupdconn.Flags{Server: "dedupd.example:7070", Token: "tok-XYZZY"}}, "--token would be sent in the clear"},
		{"cert without key", connOptions{Flags: dedupdconn.Flags{Server: "127.0.0.1:1", TLSCert: "c.pem"}}, "--tls-cert and --tls-key go together"},
		{"missing CA file", connOptions{Flags: dedupdconn.Flags{Server: "127.0.0.1:1", TLSCA: "/nonexistent/ca.pem"}}, "--tls-ca"},
		{"CA file without a certificate", connOptions{Flags: dedupdconn.Flags{Server: "127.0.0.1:1", TLSCA: notPEM}}, "no PEM certificate in " + notPEM},
		{"unreadable key pair", connOptions{Flags: dedupdconn.Flags{Server: "127.0.0.1:1", TLSCert: notPEM, TLSKey: notPEM}}, "--tls-cert"},
		{"empty server", connOptions{}, "--server is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.dial()
			var usage usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("dial() = %v, want a usage error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), tt.o.Token) && tt.o.Token != "" {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}
	o := connOptions{Flags: dedupdconn.Flags{Server: "dedupd.example:7070", Token: "t", InsecureToken: true}}
	if conn, err := o.dial(); err != nil {
		t.Errorf("--insecure-token: %v", err)
	} else {
		conn.Close()
	}
}

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/testpki"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// tlsFixture is a server CA and a client CA with files for the server.
type tlsFixture struct {
	serverCA, clientCA *testpki.CA
	dir                string
	cert, key, ca      string
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	f := &tlsFixture{serverCA: testpki.TestCA(t, "server-ca"), clientCA: testpki.TestCA(t, "client-ca"), dir: t.TempDir()}
	leaf, err := f.serverCA.Server("dedupd", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if f.cert, f.key, err = leaf.WriteFiles(f.dir, "server"); err != nil {
		t.Fatal(err)
	}
	if f.ca, err = f.clientCA.WriteCert(f.dir, "client-ca"); err != nil {
		t.Fatal(err)
	}
	return f
}

// clientCreds trusts the server CA and presents the given certificates.
func (f *tlsFixture) clientCreds(certs ...tls.Certificate) grpc.DialOption {
	return grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: f.serverCA.Pool(), Certificates: certs}))
}

// clientCert is a client certificate of ca for cn with the URI SANs.
func clientCert(t *testing.T, ca *testpki.CA, cn string, uris ...string) tls.Certificate {
	t.Helper()
	leaf, err := ca.Client(pkix.Name{CommonName: cn}, uris...)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := leaf.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func lookupErr(conn *grpc.ClientConn, ctx context.Context, consumer string, opts ...grpc.CallOption) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := dedupv1.NewDedupServiceClient(conn).Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: "k"}, opts...)
	return err
}

// TestTLSHandshake: a client that trusts the server's CA gets in; one
// that speaks plaintext, or does not trust the CA, does not.
func TestTLSHandshake(t *testing.T) {
	f := newTLSFixture(t)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey = f.cert, f.key
	srv := startGuarded(t, cfg, nil)

	if err := lookupErr(srv.dial(t, f.clientCreds()), context.Background(), "c"); status.Code(err) != codes.NotFound {
		t.Fatalf("TLS client: %v, want NOT_FOUND from the handler", err)
	}
	plain := srv.dial(t, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err := lookupErr(plain, context.Background(), "c"); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext client: %v, want UNAVAILABLE (no handshake)", err)
	}
	untrusting := srv.dial(t, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: x509.NewCertPool()})))
	if err := lookupErr(untrusting, context.Background(), "c"); status.Code(err) != codes.Unavailable {
		t.Fatalf("client not trusting the CA: %v, want UNAVAILABLE", err)
	}
}

// TestMutualTLSIdentity: with --tls-client-ca the handshake needs a client
// certificate from that CA, and a certificate named in the auth file
// stands for a token.
func TestMutualTLSIdentity(t *testing.T) {
	f := newTLSFixture(t)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA = f.cert, f.key, f.ca
	cfg.AuthTokens = authFile(t, fmt.Sprintf(`tokens: [{sha256: %s, consumers: [payments]}]
certificates:
  - {subject: "CN=inventory-worker", consumers: [inventory]}
  - {uri: "spiffe://test/ledger", consumers: [ledger]}
`, sha256Hex(allToken)))
	srv := startGuarded(t, cfg, nil)

	cases := []struct {
		name     string
		creds    grpc.DialOption
		token    string
		consumer string
		code     codes.Code
	}{
		{"no client certificate", f.clientCreds(), "", "inventory", codes.Unavailable},
		{"certificate of another CA", f.clientCreds(clientCert(t, f.serverCA, "inventory-worker")), "", "inventory", codes.Unavailable},
		{"subject stands for a token", f.clientCreds(clientCert(t, f.clientCA, "inventory-worker")), "", "inventory", codes.NotFound},
		{"subject limited to its consumers", f.clientCreds(clientCert(t, f.clientCA, "inventory-worker")), "", "payments", codes.PermissionDenied},
		{"URI SAN stands for a token", f.clientCreds(clientCert(t, f.clientCA, "anything", "spiffe://test/ledger")), "", "ledger", codes.NotFound},
		{"verified but unlisted certificate", f.clientCreds(clientCert(t, f.clientCA, "stranger")), "", "inventory", codes.Unauthenticated},
		{"a token wins over the certificate", f.clientCreds(clientCert(t, f.clientCA, "inventory-worker")), allToken, "payments", codes.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := lookupErr(srv.dial(t, tc.creds), withToken(tc.token), tc.consumer)
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %v", err, tc.code)
			}
		})
	}
}

// TestTLSReloadServesTheNewCertificate: after the files change and the
// server reloads, new connections get the new certificate.
func TestTLSReloadServesTheNewCertificate(t *testing.T) {
	f := newTLSFixture(t)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey = f.cert, f.key
	srv := startGuarded(t, cfg, nil)
	servedCN := func() string {
		var p peer.Peer
		conn := srv.dial(t, f.clientCreds())
		if err := lookupErr(conn, context.Background(), "c", grpc.Peer(&p)); status.Code(err) != codes.NotFound {
			t.Fatalf("lookup: %v", err)
		}
		return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].Subject.CommonName
	}
	if cn := servedCN(); cn != "dedupd" {
		t.Fatalf("served %q, want dedupd", cn)
	}
	rotated, err := f.serverCA.Server("dedupd-rotated", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, f.cert, string(rotated.CertPEM))
	rewrite(t, f.key, string(rotated.KeyPEM))
	if err := srv.reload(); err != nil {
		t.Fatal(err)
	}
	if cn := servedCN(); cn != "dedupd-rotated" {
		t.Fatalf("after reload served %q, want dedupd-rotated", cn)
	}
	rewrite(t, f.key, "not a key")
	if err := srv.reload(); err == nil {
		t.Fatal("reload with a broken key succeeded")
	}
	if cn := servedCN(); cn != "dedupd-rotated" {
		t.Fatalf("after a failed reload served %q, want the certificate in force", cn)
	}
}

package testpki_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/testpki"
)

// TestServerCertificate: a server certificate verifies against its CA for
// each of its hosts and for server authentication only, and not against
// another CA or for a host it does not name.
func TestServerCertificate(t *testing.T) {
	ca, other := testpki.TestCA(t, "ca"), testpki.TestCA(t, "other")
	leaf, err := ca.Server("dedupd", "localhost", "127.0.0.1", "::1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		roots *x509.CertPool
		host  string
		usage x509.ExtKeyUsage
		ok    bool
	}{
		{"DNS name", ca.Pool(), "localhost", x509.ExtKeyUsageServerAuth, true},
		{"IPv4", ca.Pool(), "127.0.0.1", x509.ExtKeyUsageServerAuth, true},
		{"IPv6", ca.Pool(), "::1", x509.ExtKeyUsageServerAuth, true},
		{"host not named", ca.Pool(), "dedupd.example", x509.ExtKeyUsageServerAuth, false},
		{"another CA", other.Pool(), "localhost", x509.ExtKeyUsageServerAuth, false},
		{"as a client", ca.Pool(), "", x509.ExtKeyUsageClientAuth, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := leaf.Cert.Verify(x509.VerifyOptions{
				Roots: tt.roots, DNSName: tt.host, KeyUsages: []x509.ExtKeyUsage{tt.usage}})
			if (err == nil) != tt.ok {
				t.Fatalf("Verify = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if leaf.Cert.Subject.CommonName != "dedupd" {
		t.Errorf("subject %v, want CN=dedupd", leaf.Cert.Subject)
	}
}

// TestClientCertificate: a client certificate carries its subject and URI
// SANs and verifies for client authentication.
func TestClientCertificate(t *testing.T) {
	ca := testpki.TestCA(t, "ca")
	subject := pkix.Name{CommonName: "worker", Organization: []string{"tests"}}
	leaf, err := ca.Client(subject, "spiffe://test/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{
		Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if got := leaf.Cert.Subject.String(); got != "CN=worker,O=tests" {
		t.Errorf("subject %q", got)
	}
	if len(leaf.Cert.URIs) != 1 || leaf.Cert.URIs[0].String() != "spiffe://test/ledger" {
		t.Errorf("URI SANs %v", leaf.Cert.URIs)
	}
	if _, err := ca.Client(subject, "://no scheme"); err == nil {
		t.Error("a malformed URI SAN was accepted")
	}
}

// TestFilesAndKeyPair: what WriteFiles and WriteCert write loads back with
// crypto/tls, and every certificate of a CA has its own serial number.
func TestFilesAndKeyPair(t *testing.T) {
	ca := testpki.TestCA(t, "ca")
	dir := t.TempDir()
	caFile, err := ca.WriteCert(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	serials := map[string]bool{ca.Cert.SerialNumber.String(): true}
	for _, name := range []string{"a", "b"} {
		leaf, err := ca.Server(name, "localhost")
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile, err := leaf.WriteFiles(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := leaf.TLSCertificate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		serials[leaf.Cert.SerialNumber.String()] = true
	}
	if len(serials) != 3 {
		t.Errorf("serial numbers %v are not distinct", serials)
	}
	if want := dir + "/ca.pem"; caFile != want {
		t.Errorf("CA file %s, want %s", caFile, want)
	}
}

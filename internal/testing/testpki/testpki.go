// Package testpki makes throwaway X.509 certificate authorities and the
// server and client certificates they sign, for the tests of TLS and
// mutual TLS across the repository (server, client, dedupctl and the
// dedupdtest PKI that the Python and Node client tests use).
//
// Every key is made afresh when it is asked for and lives only in memory
// and in the files a test writes into its own temporary directory: no key
// is ever committed, and nothing here is fit to secure a deployment.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	// Cert is the CA certificate, CertPEM the same PEM-encoded: the trust
	// root of clients and the --tls-client-ca of a server.
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
	// serial numbers the certificates the CA issues; the CA's own is 1.
	serial atomic.Int64
}

// Leaf is a certificate signed by a CA, with its private key.
type Leaf struct {
	Cert *x509.Certificate
	// CertPEM is the certificate and KeyPEM its PKCS#8 private key, both
	// PEM-encoded.
	CertPEM, KeyPEM []byte
}

// Every certificate is valid from validBefore before its issue (clock skew
// between a test and the process it starts) to validAfter after it
// (longer than any test run).
const validBefore, validAfter = time.Hour, 24 * time.Hour

// NewCA makes a CA whose subject is commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-validBefore), NotAfter: now.Add(validAfter),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testpki: making CA %q: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), key: key}
	ca.serial.Store(1)
	return ca, nil
}

// TestCA is NewCA for a test: it fails t on error.
func TestCA(t testing.TB, commonName string) *CA {
	t.Helper()
	ca, err := NewCA(commonName)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// WriteCert writes the CA certificate to dir/name.pem and returns the path.
func (ca *CA) WriteCert(dir, name string) (string, error) {
	path := filepath.Join(dir, name+".pem")
	return path, os.WriteFile(path, ca.CertPEM, 0o600)
}

// Server issues a server certificate whose subject is commonName, valid
// for hosts: each an IP address or a DNS name.
func (ca *CA) Server(commonName string, hosts ...string) (*Leaf, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl)
}

// Client issues a client certificate with subject and, as URI SANs, uris
// (SPIFFE IDs, for example).
func (ca *CA) Client(subject pkix.Name, uris ...string) (*Leaf, error) {
	tmpl := &x509.Certificate{
		Subject:     subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, u := range uris {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("testpki: URI SAN: %w", err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	return ca.issue(tmpl)
}

// issue signs tmpl, completed with a fresh key, a serial number, the
// validity and the key usage every leaf has.
func (ca *CA) issue(tmpl *x509.Certificate) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.SerialNumber = big.NewInt(ca.serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-validBefore), now.Add(validAfter)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("testpki: issuing %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), KeyPEM: encodePEM("PRIVATE KEY", keyDER)}, nil
}

// TLSCertificate is the leaf as crypto/tls presents it.
func (l *Leaf) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(l.CertPEM, l.KeyPEM)
}

// WriteFiles writes the certificate to dir/name.pem and the key to
// dir/name-key.pem, and returns both paths.
func (l *Leaf) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, l.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, l.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func encodePEM(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

package dedupdtest

import (
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/testpki"
)

// PKI is a throwaway certificate authority made at test time, with a
// server certificate for the loopback addresses and a client certificate,
// all written as PEM files in Dir. Nothing of it is ever committed: every
// test run makes its own keys.
type PKI struct {
	Dir string `json:"dir"`
	// CA is the CA certificate: the clients' trust root and the server's
	// --tls-client-ca.
	CA string `json:"ca"`
	// ServerCert and ServerKey are valid for 127.0.0.1, ::1 and localhost.
	ServerCert string `json:"server_cert"`
	ServerKey  string `json:"server_key"`
	// ClientCert and ClientKey are a client certificate whose subject is
	// ClientSubject, as the auth file's certificates entries spell it.
	ClientCert    string `json:"client_cert"`
	ClientKey     string `json:"client_key"`
	ClientSubject string `json:"client_subject"`
}

// ClientCommonName and ClientOrganization make the client certificate's
// subject.
const (
	ClientCommonName   = "dedupd-test-client"
	ClientOrganization = "dedupd tests"
)

// NewPKI makes a CA, a server and a client certificate in dir.
func NewPKI(dir string) (*PKI, error) {
	ca, err := testpki.NewCA("dedupd test CA")
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir}
	if p.CA, err = ca.WriteCert(dir, "ca"); err != nil {
		return nil, err
	}
	server, err := ca.Server("localhost", "localhost", "127.0.0.1", "::1")
	if err != nil {
		return nil, err
	}
	if p.ServerCert, p.ServerKey, err = server.WriteFiles(dir, "server"); err != nil {
		return nil, err
	}
	client, err := ca.Client(pkix.Name{CommonName: ClientCommonName, Organization: []string{ClientOrganization}})
	if err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = client.WriteFiles(dir, "client"); err != nil {
		return nil, err
	}
	p.ClientSubject = client.Cert.Subject.String()
	return p, nil
}

// TestPKI is NewPKI in a temporary directory of t.
func TestPKI(t testing.TB) *PKI {
	t.Helper()
	p, err := NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TLSFlags are the dedupd serve flags for TLS with the server certificate
// and, when mutual is set, required client certificates signed by the CA.
func (p *PKI) TLSFlags(mutual bool) []string {
	flags := []string{"--tls-cert", p.ServerCert, "--tls-key", p.ServerKey}
	if mutual {
		flags = append(flags, "--tls-client-ca", p.CA)
	}
	return flags
}

// TokenSHA256 is the hex SHA-256 of a token, as the auth file stores it.
func TokenSHA256(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Token is one tokens entry of an auth file.
type Token struct {
	Token     string
	Consumers []string
	Admin     bool
}

// AuthFile writes an --auth-tokens file granting the tokens and, when
// certSubject is set, a client certificate with that subject, and returns
// its path.
func AuthFile(t testing.TB, tokens []Token, certSubject string, certConsumers ...string) string {
	t.Helper()
	var b []byte
	b = append(b, "tokens:\n"...)
	for _, tok := range tokens {
		b = fmt.Appendf(b, "  - sha256: %s\n    consumers: %s\n    admin: %v\n",
			TokenSHA256(tok.Token), yamlList(tok.Consumers), tok.Admin)
	}
	if certSubject != "" {
		b = fmt.Appendf(b, "certificates:\n  - subject: %q\n    consumers: %s\n", certSubject, yamlList(certConsumers))
	}
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func yamlList(items []string) string {
	b := []byte("[")
	for i, s := range items {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%q", s)
	}
	return string(append(b, ']'))
}

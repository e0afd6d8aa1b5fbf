package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/consumer"
)

// File is the --auth-tokens file. JSON is valid YAML, so either works.
//
//	tokens:
//	  - name: inventory-prod          # optional; shown in logs instead of the token
//	    sha256: 9f86d0...             # hex SHA-256 of the token; the token itself is never stored
//	    consumers: [inventory]        # ["*"] covers every consumer
//	    admin: false                  # true allows AdminService
//	certificates:                     # with --tls-client-ca: verified client certificates
//	  - subject: "CN=payments-worker" # the leaf's subject, as Go prints it (RFC 2253)
//	    consumers: [payments]
//	  - uri: "spiffe://example.org/ledger"  # or a URI SAN of the leaf
//	    consumers: [ledger]
type File struct {
	Tokens       []TokenEntry       `yaml:"tokens"`
	Certificates []CertificateEntry `yaml:"certificates"`
}

// Grant is what a credential allows.
type Grant struct {
	// Name identifies the credential in logs; never the secret.
	Name      string   `yaml:"name"`
	Consumers []string `yaml:"consumers"`
	Admin     bool     `yaml:"admin"`
}

// TokenEntry is one bearer token, known only by its hash.
type TokenEntry struct {
	SHA256 string `yaml:"sha256"`
	Grant  `yaml:",inline"`
}

// CertificateEntry is one client certificate identity: exactly one of
// Subject or URI.
type CertificateEntry struct {
	Subject string `yaml:"subject"`
	URI     string `yaml:"uri"`
	Grant   `yaml:",inline"`
}

// allConsumers in a consumers list covers every consumer.
const allConsumers = "*"

// covers reports whether the grant allows calls for consumer.
func (g *Grant) covers(consumer string) bool {
	return slices.Contains(g.Consumers, allConsumers) || slices.Contains(g.Consumers, consumer)
}

// LoadFile reads and checks an auth file.
func LoadFile(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading auth file: %w", err)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// A misspelt field must not silently grant nothing, or everything.
	dec.KnownFields(true)
	// An empty file decodes as EOF; compile reports it as granting nothing.
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	// A second document (after a "---" line) would otherwise be ignored
	// without a word, and the grants it holds with it.
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("auth file %s: holds more than one YAML document; put every entry in one", path)
	}
	rules, err := f.compile()
	if err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	return rules, nil
}

// compile checks every entry and turns the hex hashes into bytes.
func (f *File) compile() (*Rules, error) {
	if len(f.Tokens) == 0 && len(f.Certificates) == 0 {
		return nil, errors.New("no tokens and no certificates: nobody could call")
	}
	r := &Rules{}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range f.Tokens {
		raw, err := hex.DecodeString(t.SHA256)
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("tokens[%d]: sha256 must be %d hex digits", i, 2*sha256.Size)
		}
		sum := [sha256.Size]byte(raw)
		if seen[sum] {
			return nil, fmt.Errorf("tokens[%d]: the same sha256 appears twice", i)
		}
		seen[sum] = true
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("tokens[%d]: %w", i, err)
		}
		g := t.Grant
		if g.Name == "" {
			g.Name = fmt.Sprintf("token#%d", i)
		}
		r.tokens = append(r.tokens, tokenRule{sum: sum, grant: g})
	}
	for i, c := range f.Certificates {
		if (c.Subject == "") == (c.URI == "") {
			return nil, fmt.Errorf("certificates[%d]: give exactly one of subject or uri", i)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("certificates[%d]: %w", i, err)
		}
		g := c.Grant
		if g.Name == "" {
			g.Name = "cert:" + c.Subject + c.URI
		}
		r.certs = append(r.certs, certRule{subject: c.Subject, uri: c.URI, grant: g})
	}
	return r, nil
}

func (g *Grant) check() error {
	if len(g.Consumers) == 0 && !g.Admin {
		return errors.New("grants nothing: list consumers, or set admin: true")
	}
	// A name no request may carry (Alpha, "alpha ") would never match,
	// silently granting nothing; the rule is the requests' own.
	for _, c := range g.Consumers {
		if c != allConsumers && !consumer.Valid(c) {
			return fmt.Errorf("consumer %q can never match a request: a consumer name %s", clip.String(c, clip.MaxLogged), consumer.Problem(c))
		}
	}
	return nil
}

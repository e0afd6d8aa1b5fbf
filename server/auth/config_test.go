package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadFileRefusesWhatCouldGrantTheWrongThing: every malformed entry is
// an error naming the entry, never a silently different grant.
func TestLoadFileRefusesWhatCouldGrantTheWrongThing(t *testing.T) {
	h := hashOf("s3cret")
	cases := []struct{ name, content, wantErr string }{
		{"empty", "", "nobody could call"},
		{"misspelt field", "tokens: [{sha256: " + h + ", consumer: [a]}]", "consumer"},
		{"short hash", "tokens: [{sha256: abc, consumers: [a]}]", "tokens[0]: sha256"},
		{"not hex", "tokens: [{sha256: " + strings.Repeat("z", 64) + ", consumers: [a]}]", "tokens[0]: sha256"},
		{"duplicate", "tokens: [{sha256: " + h + ", consumers: [a]}, {sha256: " + h + ", consumers: [b]}]", "tokens[1]: the same sha256"},
		{"grants nothing", "tokens: [{sha256: " + h + "}]", "grants nothing"},
		{"empty consumer", "tokens: [{sha256: " + h + ", consumers: ['']}]", `tokens[0]: consumer ""`},
		{"upper-case consumer", "tokens: [{sha256: " + h + ", consumers: [Alpha]}]", `tokens[0]: consumer "Alpha" can never match`},
		{"consumer with a trailing space", "tokens: [{sha256: " + h + ", consumers: ['alpha ']}]", `consumer "alpha " can never match`},
		{"certificate consumer that cannot match", "certificates: [{subject: CN=a, consumers: [a, 'B*']}]", `certificates[0]: consumer "B*"`},
		{"second document", "tokens: [{sha256: " + h + ", consumers: [a]}]\n---\ntokens: [{sha256: " + hashOf("other") + ", consumers: ['*']}]\n", "more than one YAML document"},
		{"empty second document", "tokens: [{sha256: " + h + ", consumers: [a]}]\n---\n", "more than one YAML document"},
		{"cert with both", "certificates: [{subject: CN=a, uri: 'spiffe://x/a', consumers: [a]}]", "exactly one"},
		{"cert with neither", "certificates: [{consumers: [a]}]", "exactly one"},
		{"not yaml", "tokens: [", "auth file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadFile(writeFile(t, tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("LoadFile = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestLoadFileAcceptsYAMLAndJSON: the same grants in either syntax; the
// token itself never appears in what is kept.
func TestLoadFileAcceptsYAMLAndJSON(t *testing.T) {
	h := hashOf("s3cret")
	files := map[string]string{
		"yaml": "tokens:\n  - name: inv\n    sha256: " + h + "\n    consumers: [inventory, payments]\n" +
			"certificates:\n  - subject: CN=worker\n    consumers: ['*']\n    admin: true\n",
		"json": `{"tokens": [{"name": "inv", "sha256": "` + h + `", "consumers": ["inventory", "payments"]}],
			"certificates": [{"subject": "CN=worker", "consumers": ["*"], "admin": true}]}`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			r, err := LoadFile(writeFile(t, content))
			if err != nil {
				t.Fatal(err)
			}
			g := r.byToken("s3cret")
			if g == nil || g.Name != "inv" || !g.covers("payments") || g.covers("ledger") || g.Admin {
				t.Fatalf("grant of the token = %+v, want inv for inventory and payments, not admin", g)
			}
			if r.byToken("s3cret ") != nil || r.byToken("") != nil {
				t.Fatal("a different token matched")
			}
			if c := r.certs[0].grant; !c.covers("anything") || !c.Admin {
				t.Fatalf("certificate grant = %+v, want every consumer and admin", c)
			}
		})
	}
}

// TestReloadRefusesWhatLoadRefuses: at SIGHUP the same checks run, and a
// file they refuse leaves the rules in force.
func TestReloadRefusesWhatLoadRefuses(t *testing.T) {
	path := writeFile(t, "tokens: [{name: inv, sha256: "+hashOf("s3cret")+", consumers: [inventory]}]\n")
	a, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"tokens: [{sha256: " + hashOf("s3cret") + ", consumers: [Inventory]}]\n",
		"tokens: [{sha256: " + hashOf("s3cret") + ", consumers: [inventory]}]\n---\ntokens: []\n",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := a.Reload(); err == nil {
			t.Fatalf("Reload accepted %q", bad)
		}
		if g := a.rules.Load().byToken("s3cret"); g == nil || !g.covers("inventory") {
			t.Fatalf("after a refused reload the token grants %v, want the rules in force", g)
		}
	}
}

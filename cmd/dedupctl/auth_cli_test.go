package main

import (
	"strings"
	"testing"

	"github.com/dedupd/dedupd/client/dedupdtest"
)

// The tokens of the auth CLI tests. Each is distinctive so that a test can
// check it never shows in dedupctl's output.
const (
	ctlAdminToken = "tok-ctl-admin-5d1e9b73"
	ctlShopToken  = "tok-ctl-shop-c28a6f04"
	ctlWrongToken = "tok-ctl-wrong-7f3b0e91"
)

var ctlTokens = []dedupdtest.Token{
	{Token: ctlAdminToken, Consumers: []string{"*"}, Admin: true},
	{Token: ctlShopToken, Consumers: []string{"shop"}},
}

// authCase is one dedupctl run against a dedupd with --auth-tokens: its
// arguments and environment, and the exit status and first stderr line
// expected (an empty want for a success).
type authCase struct {
	name string
	env  []string
	args []string
	code int
	want string
}

func runAuthCases(t *testing.T, addr string, cases []authCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCtlEnv(t, addr, c.env, c.args...)
			first, _, _ := strings.Cut(r.stderr, "\n")
			t.Logf("exit %d: %s", r.code, first)
			if r.code != c.code || (c.want != "" && !strings.Contains(first, c.want)) {
				t.Fatalf("dedupctl %v: want exit %d and %q on the first line\n%v", c.args, c.code, c.want, r)
			}
			if c.code != exitOK && (!strings.HasPrefix(first, "dedupctl: ") || strings.Count(r.stderr, "\n") != 1) {
				t.Fatalf("dedupctl %v: want one error line, got\n%v", c.args, r)
			}
			for _, tok := range []string{ctlAdminToken, ctlShopToken, ctlWrongToken} {
				if strings.Contains(r.stdout+r.stderr, tok) {
					t.Fatalf("dedupctl %v printed a token\n%v", c.args, r)
				}
			}
		})
	}
}

// TestCLIAuthTokens runs dedupctl against a real dedupd with
// --auth-tokens, in plaintext on loopback: the token works from --token
// and from DEDUPCTL_TOKEN (the flag wins), a missing or unknown token is
// UNAUTHENTICATED with the hint where to put one, and a consumer token may
// read its consumer's records but not another's nor call admin commands.
func TestCLIAuthTokens(t *testing.T) {
	auth := dedupdtest.AuthFile(t, ctlTokens, "")
	s := startDedupd(t, "--auth-tokens", auth)
	runAuthCases(t, s.addr, []authCase{
		{name: "flag", args: []string{"--token", ctlAdminToken, "stats"}},
		{name: "env", env: []string{"DEDUPCTL_TOKEN=" + ctlAdminToken}, args: []string{"stats"}},
		{name: "flag wins over env", env: []string{"DEDUPCTL_TOKEN=" + ctlWrongToken},
			args: []string{"--token", ctlAdminToken, "policy", "list"}},
		{name: "no token", args: []string{"stats"}, code: exitFailure,
			want: "UNAUTHENTICATED: no bearer token"},
		{name: "no token hint", args: []string{"records", "list", "shop"}, code: exitFailure,
			want: "--token or DEDUPCTL_TOKEN"},
		{name: "unknown token", env: []string{"DEDUPCTL_TOKEN=" + ctlWrongToken}, args: []string{"stats"},
			code: exitFailure, want: "UNAUTHENTICATED: unknown bearer token"},
		{name: "consumer token reads its consumer", args: []string{"--token", ctlShopToken, "records", "list", "shop"}},
		{name: "consumer token, other consumer", args: []string{"--token", ctlShopToken, "records", "list", "payments"},
			code: exitFailure, want: "PERMISSION_DENIED"},
		{name: "consumer token, admin command", args: []string{"--token", ctlShopToken, "stats"},
			code: exitFailure, want: "PERMISSION_DENIED"},
		{name: "consumer token, admin delete", args: []string{"--token", ctlShopToken, "records", "delete", "shop", "k", "--yes"},
			code: exitFailure, want: "PERMISSION_DENIED"},
	})
}

// TestCLITLS runs dedupctl against a real dedupd serving TLS with
// --auth-tokens: --tls-ca verifies the server and the token goes over
// TLS; without the CA, or in plaintext, nothing gets through.
func TestCLITLS(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	auth := dedupdtest.AuthFile(t, ctlTokens, "")
	s := startDedupd(t, append([]string{"--auth-tokens", auth}, pki.TLSFlags(false)...)...)
	runAuthCases(t, s.addr, []authCase{
		{name: "CA and token", args: []string{"--tls-ca", pki.CA, "--token", ctlAdminToken, "stats"}},
		{name: "CA from env", env: []string{"DEDUPCTL_TLS_CA=" + pki.CA, "DEDUPCTL_TOKEN=" + ctlShopToken},
			args: []string{"records", "list", "shop"}},
		{name: "server name", args: []string{"--tls-ca", pki.CA, "--tls-server-name", "localhost", "--token", ctlAdminToken, "stats"}},
		{name: "CA, no token", args: []string{"--tls-ca", pki.CA, "stats"}, code: exitFailure,
			want: "UNAUTHENTICATED"},
		{name: "CA not trusted", args: []string{"--tls", "--token", ctlAdminToken, "stats"}, code: exitFailure,
			want: "cannot reach dedupd"},
		{name: "plaintext", args: []string{"--token", ctlAdminToken, "stats"}, code: exitFailure,
			want: "(does it serve TLS? use --tls or --tls-ca)"},
	})
}

// TestCLIMutualTLS runs dedupctl against a real dedupd requiring client
// certificates, whose auth file lists the test client certificate for
// consumer shop: --tls-cert/--tls-key alone authenticate, a token still
// decides when given, and without a certificate the handshake fails.
func TestCLIMutualTLS(t *testing.T) {
	pki := dedupdtest.TestPKI(t)
	auth := dedupdtest.AuthFile(t, ctlTokens, pki.ClientSubject, "shop")
	s := startDedupd(t, append([]string{"--auth-tokens", auth}, pki.TLSFlags(true)...)...)
	cert := []string{"--tls-ca", pki.CA, "--tls-cert", pki.ClientCert, "--tls-key", pki.ClientKey}
	with := func(args ...string) []string { return append(append([]string{}, cert...), args...) }
	runAuthCases(t, s.addr, []authCase{
		{name: "certificate", args: with("records", "list", "shop")},
		{name: "certificate, other consumer", args: with("records", "list", "payments"), code: exitFailure,
			want: "PERMISSION_DENIED"},
		{name: "certificate, admin command", args: with("stats"), code: exitFailure, want: "PERMISSION_DENIED"},
		{name: "certificate and admin token", args: with("--token", ctlAdminToken, "stats")},
		{name: "no certificate", args: []string{"--tls-ca", pki.CA, "--token", ctlAdminToken, "stats"},
			code: exitFailure, want: "cannot reach dedupd"},
	})
}

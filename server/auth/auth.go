// Package auth decides who may call dedupd, and for which consumers. A
// caller presents a bearer token (`authorization: Bearer <token>`) or,
// under mutual TLS, a verified client certificate; the --auth-tokens file
// says what each may do. The rules are swapped atomically on reload, so a
// call sees either the old rules or the new ones, never a mix, and no call
// is dropped.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"fmt"
	"slices"
	"sync/atomic"

	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// Rules is one loaded auth file.
type Rules struct {
	tokens []tokenRule
	certs  []certRule
}

type tokenRule struct {
	sum   [sha256.Size]byte
	grant Grant
}

type certRule struct {
	subject, uri string
	grant        Grant
}

// Authorizer holds the rules in force.
type Authorizer struct {
	path  string
	rules atomic.Pointer[Rules]
}

// New loads the auth file at path.
func New(path string) (*Authorizer, error) {
	rules, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	a := &Authorizer{path: path}
	a.rules.Store(rules)
	return a, nil
}

// Reload reads the file again. On any error the rules in force stay, so a
// bad edit never locks everybody out or lets everybody in.
func (a *Authorizer) Reload() error {
	rules, err := LoadFile(a.path)
	if err != nil {
		return err
	}
	a.rules.Store(rules)
	return nil
}

// AuthFunc is the go-grpc-middleware auth function: who is calling, and may
// they call this method for this consumer. It needs the consumer in the
// context (consumer.UnaryServerInterceptor, earlier in the chain).
func (a *Authorizer) AuthFunc(ctx context.Context) (context.Context, error) {
	name, _ := consumer.FromContext(ctx)
	grant, err := a.identify(ctx)
	if err == nil {
		method, _ := grpc.Method(ctx)
		err = authorize(grant, method, name)
	}
	if err != nil {
		return nil, rpcerrors.Status(err, name, "").Err()
	}
	return ctx, nil
}

// authorize decides a known caller's call. An admin method (the method
// table, server/rpcmethod) needs an admin grant; a consumer's method needs
// a grant covering the request's consumer; a method outside the table
// (server reflection) needs a valid credential and nothing more. A
// consumer name no request may carry is refused as the handler would
// refuse it (INVALID_FIELD), before any answer repeats it: a grant can
// never cover it, and a refusal that quoted it would hand back whatever
// the caller sent, megabytes included.
func authorize(g *Grant, method, name string) error {
	m, ok := rpcmethod.Of(method)
	switch {
	case !ok:
	case m.Admin && !g.Admin:
		return fmt.Errorf("%s may not call %s: %w", g.Name, m.Service, rpcerrors.ErrPermissionDenied)
	case !m.Admin && !consumer.Valid(name):
		return &rpcerrors.FieldError{Field: "consumer", Problem: consumer.Problem(name)}
	case !m.Admin && !g.covers(name):
		return fmt.Errorf("%s may not act for consumer %q: %w", g.Name, name, rpcerrors.ErrPermissionDenied)
	}
	return nil
}

// identify finds the grant of the caller's bearer token or, when it sent
// none, of its verified client certificate.
func (a *Authorizer) identify(ctx context.Context) (*Grant, error) {
	token, err := grpcauth.AuthFromMD(ctx, "bearer")
	return a.grantOf(token, err == nil, verifiedLeaf(ctx))
}

// Identify is the grant of a bearer token or, when token is empty, of a
// client certificate whose chain the server verified (nil when none):
// what a call presenting them may do. The web console asks it to show a
// caller only what the API would let it do; the API decides each call
// through AuthFunc all the same.
func (a *Authorizer) Identify(token string, verified *x509.Certificate) (Grant, error) {
	g, err := a.grantOf(token, token != "", verified)
	if err != nil {
		return Grant{}, err
	}
	return Grant{Name: g.Name, Consumers: slices.Clone(g.Consumers), Admin: g.Admin}, nil
}

// grantOf decides by the token when one was presented (an empty one
// included), else by the verified certificate.
func (a *Authorizer) grantOf(token string, presented bool, leaf *x509.Certificate) (*Grant, error) {
	rules := a.rules.Load()
	if presented {
		if g := rules.byToken(token); g != nil {
			return g, nil
		}
		return nil, fmt.Errorf("unknown bearer token: %w", rpcerrors.ErrUnauthenticated)
	}
	if leaf != nil {
		if g := rules.byCertificate(leaf); g != nil {
			return g, nil
		}
		return nil, fmt.Errorf("client certificate %q is not in the auth file: %w", leaf.Subject, rpcerrors.ErrUnauthenticated)
	}
	return nil, fmt.Errorf("no bearer token (metadata authorization: Bearer <token>): %w", rpcerrors.ErrUnauthenticated)
}

// byToken hashes the presented token and compares the hash with every
// entry in constant time, without stopping at a match, so the time taken
// says nothing about which entry, or how much of one, matched.
func (r *Rules) byToken(token string) *Grant {
	sum := sha256.Sum256([]byte(token))
	var found *Grant
	for i := range r.tokens {
		if subtle.ConstantTimeCompare(sum[:], r.tokens[i].sum[:]) == 1 {
			found = &r.tokens[i].grant
		}
	}
	return found
}

func (r *Rules) byCertificate(leaf *x509.Certificate) *Grant {
	subject := leaf.Subject.String()
	for i, c := range r.certs {
		if c.subject != "" && c.subject == subject {
			return &r.certs[i].grant
		}
		for _, u := range leaf.URIs {
			if c.uri != "" && c.uri == u.String() {
				return &r.certs[i].grant
			}
		}
	}
	return nil
}

// verifiedLeaf returns the client certificate of a TLS connection whose
// chain the server verified; nil otherwise.
func verifiedLeaf(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.PeerCertificates) == 0 {
		return nil
	}
	return info.State.PeerCertificates[0]
}

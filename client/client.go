package client

import (
	"context"
	"fmt"
	"iter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/loopback"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Record is everything dedupd remembers about one key.
type Record = dedupv1.Record

// Outcome is what a Claim found.
type Outcome = dedupv1.Outcome

// The outcomes of a Claim.
const (
	Acquired   = dedupv1.Outcome_OUTCOME_ACQUIRED
	InProgress = dedupv1.Outcome_OUTCOME_IN_PROGRESS
	Completed  = dedupv1.Outcome_OUTCOME_COMPLETED
	Rejected   = dedupv1.Outcome_OUTCOME_REJECTED
)

// Client calls one dedupd server. It is safe for concurrent use.
type Client struct {
	conn  *grpc.ClientConn // owned by the client; nil from NewFromConn
	ic    *interceptedConn
	dedup dedupv1.DedupServiceClient
	admin dedupv1.AdminServiceClient
}

// New connects to the dedupd at addr (host:port or any gRPC target).
func New(addr string, opts ...Option) (*Client, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	dial := append([]grpc.DialOption{}, s.dialOptions...)
	tlsConfig := s.transportTLS()
	plaintextOK := loopback.Target(addr) || s.insecureToken
	if tlsConfig != nil {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)))
	} else {
		if s.token != "" && !plaintextOK {
			return nil, fmt.Errorf("dedup: refusing to send a bearer token in plaintext to %s: use WithTLS", addr)
		}
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return nil, fmt.Errorf("dedup: %w", err)
	}
	c := newClient(conn, s, tlsConfig != nil || !plaintextOK)
	c.conn = conn
	return c, nil
}

// NewFromConn uses a connection the caller made and keeps owning: Close
// does not close it. Options that shape the connection (WithTLS,
// WithDialOptions) are the caller's business then; WithBearerToken and the
// retry options apply per call. A bearer token is refused by gRPC on a
// plaintext connection unless conn's target is loopback.
func NewFromConn(conn *grpc.ClientConn, opts ...Option) *Client {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	return newClient(conn, s, !loopback.Target(conn.Target()) && !s.insecureToken)
}

func newClient(conn *grpc.ClientConn, s settings, requireTLS bool) *Client {
	ic := &interceptedConn{conn: conn, unary: s.retryInterceptor()}
	if s.token != "" {
		ic.callOptions = append(ic.callOptions,
			grpc.PerRPCCredentials(bearerToken{token: s.token, requireTLS: requireTLS}))
	}
	return &Client{ic: ic, dedup: dedupv1.NewDedupServiceClient(ic), admin: dedupv1.NewAdminServiceClient(ic)}
}

// interceptedConn runs every unary call through the retry interceptor and
// adds the client's call options, for connections made by New and by the
// caller alike.
type interceptedConn struct {
	conn        *grpc.ClientConn
	unary       grpc.UnaryClientInterceptor
	callOptions []grpc.CallOption
}

// Target is the gRPC target of the connection, for whoever names it (the
// bench's report, for one).
func (c *interceptedConn) Target() string { return c.conn.Target() }

func (c *interceptedConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	opts = append(append([]grpc.CallOption{}, c.callOptions...), opts...)
	return c.unary(ctx, method, args, reply, c.conn, invoke, opts...)
}

func invoke(ctx context.Context, method string, args, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
	return cc.Invoke(ctx, method, args, reply, opts...)
}

func (c *interceptedConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	opts = append(append([]grpc.CallOption{}, c.callOptions...), opts...)
	return c.conn.NewStream(ctx, desc, method, opts...)
}

// Close closes the connection New made.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Conn is the client's connection with its credentials and retries, for
// generated clients of other services on the same server (health, or the
// raw dedup.v1 stubs, as dedupctl uses them).
func (c *Client) Conn() grpc.ClientConnInterface { return c.ic }

// Target is the gRPC target the client calls.
func (c *Client) Target() string { return c.ic.conn.Target() }

// Admin is the generated AdminService client on the same connection, with
// the same credentials and retries.
func (c *Client) Admin() dedupv1.AdminServiceClient { return c.admin }

// ClaimOptions are the optional fields of a Claim.
type ClaimOptions struct {
	// LeaseTTL is the lease length; the server default when zero.
	LeaseTTL time.Duration
	// Owner describes the claimer in the record, for diagnostics (and for
	// Do, to recognise its own claim; see Do).
	Owner string
	// Wait lets the server hold the call, while another caller holds the
	// key, until the holder's outcome is stored or its lease runs out, for
	// at most Wait (and the server's --max-claim-wait). Zero answers at
	// once. A server without waiting ignores it and answers at once.
	Wait time.Duration
}

// ClaimResult is what a Claim found.
type ClaimResult struct {
	Outcome Outcome
	// Record is the key's record after the claim.
	Record *Record
	// FencingToken is set when Outcome is Acquired.
	FencingToken int64
	// RetryAfter is set when Outcome is InProgress: when the holder's lease
	// runs out.
	RetryAfter time.Duration
}

// Claim takes the lease on (consumer, key), or reports who holds it or the
// stored outcome.
func (c *Client) Claim(ctx context.Context, consumer, key string, digest []byte, opt ClaimOptions) (ClaimResult, error) {
	req := &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: digest, Owner: opt.Owner}
	if opt.LeaseTTL > 0 {
		req.LeaseTtl = durationpb.New(opt.LeaseTTL)
	}
	if opt.Wait > 0 {
		req.Wait = durationpb.New(opt.Wait)
	}
	resp, err := c.dedup.Claim(ctx, req)
	if err != nil {
		return ClaimResult{}, fromStatus(err)
	}
	return ClaimResult{
		Outcome:      resp.GetOutcome(),
		Record:       resp.GetRecord(),
		FencingToken: resp.GetFencingToken(),
		RetryAfter:   resp.GetRetryAfter().AsDuration(),
	}, nil
}

// Complete stores result as the key's outcome. Repeating it is harmless.
func (c *Client) Complete(ctx context.Context, consumer, key string, token int64, result []byte) (*Record, error) {
	resp, err := c.dedup.Complete(ctx, &dedupv1.CompleteRequest{
		Consumer: consumer, Key: key, FencingToken: token, Result: result,
	})
	return resp.GetRecord(), fromStatus(err)
}

// Rejection is a refusal: terminal, or a release of the key for a retry.
type Rejection struct {
	Reason    string
	Message   string
	Detail    []byte
	Retryable bool
}

func rejectionFromProto(r *dedupv1.Rejection) Rejection {
	return Rejection{Reason: r.GetReason(), Message: r.GetMessage(), Detail: r.GetDetail(), Retryable: r.GetRetryable()}
}

// Reject stores a terminal rejection, or with r.Retryable releases the key.
func (c *Client) Reject(ctx context.Context, consumer, key string, token int64, r Rejection) (*Record, error) {
	resp, err := c.dedup.Reject(ctx, &dedupv1.RejectRequest{
		Consumer: consumer, Key: key, FencingToken: token,
		Reason: r.Reason, Message: r.Message, Detail: r.Detail, Retryable: r.Retryable,
	})
	return resp.GetRecord(), fromStatus(err)
}

// Lookup reads a key's record; ErrNotFound when it has none.
func (c *Client) Lookup(ctx context.Context, consumer, key string) (*Record, error) {
	resp, err := c.dedup.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: key})
	return resp.GetRecord(), fromStatus(err)
}

// ExtendLease renews the lease of the holder of token for ttl from now (the
// server default when zero).
func (c *Client) ExtendLease(ctx context.Context, consumer, key string, token int64, ttl time.Duration) (*Record, error) {
	req := &dedupv1.ExtendLeaseRequest{Consumer: consumer, Key: key, FencingToken: token}
	if ttl > 0 {
		req.LeaseTtl = durationpb.New(ttl)
	}
	resp, err := c.dedup.ExtendLease(ctx, req)
	return resp.GetRecord(), fromStatus(err)
}

// ListRecords returns one page of a consumer's records.
func (c *Client) ListRecords(ctx context.Context, req *dedupv1.ListRecordsRequest) (*dedupv1.ListRecordsResponse, error) {
	resp, err := c.dedup.ListRecords(ctx, req)
	return resp, fromStatus(err)
}

// Records pages through every record that req selects, following
// next_page_token; req.PageToken is the starting point. It stops at the
// first error, which it yields.
func (c *Client) Records(ctx context.Context, req *dedupv1.ListRecordsRequest) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		page := proto.Clone(req).(*dedupv1.ListRecordsRequest)
		for {
			resp, err := c.ListRecords(ctx, page)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range resp.GetRecords() {
				if !yield(r, nil) {
					return
				}
			}
			if resp.GetNextPageToken() == "" {
				return
			}
			page.PageToken = resp.GetNextPageToken()
		}
	}
}

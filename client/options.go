package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// Option configures New and NewFromConn.
type Option func(*settings)

type settings struct {
	token string
	// insecureToken allows the token over plaintext to any address.
	insecureToken bool
	tlsConfig     *tls.Config
	tlsServerName string
	retries       uint
	backoff       retry.BackoffFunc
	dialOptions   []grpc.DialOption
}

func defaultSettings() settings {
	return settings{
		retries: 5,
		// 50ms, 100ms, 200ms, ... with ±20% jitter, never more than 2s.
		backoff: retry.BackoffExponentialWithJitterBounded(50*time.Millisecond, 0.2, 2*time.Second),
	}
}

// WithBearerToken sends "authorization: Bearer <token>" with every call.
// Over a plaintext connection the token would travel in the clear, so
// without WithTLS it is only allowed to a loopback address (127.0.0.0/8,
// ::1, localhost or a unix socket); New refuses any other.
func WithBearerToken(token string) Option { return func(s *settings) { s.token = token } }

// WithInsecureToken lets WithBearerToken send the token over plaintext to
// an address that is not loopback: an escape hatch for a network the
// caller trusts (dedupctl's --insecure-token), never a default.
func WithInsecureToken() Option { return func(s *settings) { s.insecureToken = true } }

// WithTLSServerName verifies the server's certificate against name instead
// of the host New dials, e.g. when dialing an IP address; it implies TLS
// (with the system roots unless WithTLS gives a configuration).
func WithTLSServerName(name string) Option { return func(s *settings) { s.tlsServerName = name } }

// WithTLS connects over TLS with cfg (see LoadTLSConfig). Without it New
// connects in plaintext.
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.tlsConfig = cfg } }

// WithRetries sets how many times a call that failed with UNAVAILABLE is
// retried (5 by default; 0 turns retries off). Every dedupd RPC is safe to
// repeat; see Do for what a repeated Claim answers.
func WithRetries(n uint) Option { return func(s *settings) { s.retries = n } }

// WithRetryBackoff replaces the default backoff between retries
// (exponential from 50ms with 20% jitter, at most 2s).
func WithRetryBackoff(b retry.BackoffFunc) Option { return func(s *settings) { s.backoff = b } }

// WithDialOptions adds gRPC dial options to New, such as interceptors.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(s *settings) { s.dialOptions = append(s.dialOptions, opts...) }
}

// WithTracing makes every call a client span of tp's (nil: the global
// tracer provider, otel.GetTracerProvider), a child of the span in the
// call's context, and sends its trace context to dedupd in W3C Trace
// Context and Baggage headers, so that a server with tracing on continues
// the caller's trace. Each attempt of a retried call is a span of its own.
// It adds otelgrpc's client stats handler to New's connection; with
// NewFromConn, add otelgrpc.NewClientHandler to your own connection.
func WithTracing(tp trace.TracerProvider) Option {
	return func(s *settings) {
		if tp == nil {
			tp = otel.GetTracerProvider()
		}
		propagator := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		s.dialOptions = append(s.dialOptions, grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagator))))
	}
}

// LoadTLSConfig builds a client TLS configuration from PEM files. caFile,
// when set, is the CA bundle that verifies the server (the system roots
// otherwise); certFile and keyFile, when set, are the client certificate
// and key presented for mutual TLS.
func LoadTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("dedup: reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("dedup: no PEM certificate in %s", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("dedup: a client certificate needs both certFile and keyFile")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("dedup: loading client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bearerToken is per-RPC credentials carrying a bearer token.
type bearerToken struct {
	token      string
	requireTLS bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity makes gRPC itself refuse to send the token over
// a plaintext connection, except to loopback (or where WithInsecureToken
// allowed it).
func (b bearerToken) RequireTransportSecurity() bool { return b.requireTLS }

// String keeps the token out of any log or error that prints the value.
func (bearerToken) String() string { return "bearer token (redacted)" }

// GoString is String for %#v.
func (b bearerToken) GoString() string { return b.String() }

// transportTLS is the TLS configuration New dials with, or nil for
// plaintext.
func (s settings) transportTLS() *tls.Config {
	if s.tlsConfig == nil && s.tlsServerName == "" {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.tlsConfig != nil {
		cfg = s.tlsConfig.Clone()
	}
	if s.tlsServerName != "" {
		cfg.ServerName = s.tlsServerName
	}
	return cfg
}

// retryInterceptor retries UNAVAILABLE only: it means the call did not
// reach the store or was refused before changing anything (dedupd's
// STORE_UNAVAILABLE), or the connection broke, in which case the call may
// have been applied and its repetition is answered as docs/guarantees.md
// describes.
func (s settings) retryInterceptor() grpc.UnaryClientInterceptor {
	return retry.UnaryClientInterceptor(
		retry.WithCodes(codes.Unavailable),
		retry.WithMax(s.retries+1), // the interceptor counts the first call too
		retry.WithBackoff(s.backoff),
	)
}

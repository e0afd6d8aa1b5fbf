package httpidem

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/dedupd/dedupd/client"
)

// Config is what a Middleware needs. Client and Consumer are required; every
// other field has a default.
type Config struct {
	// Client reaches dedupd; Consumer is the dedupd consumer whose records
	// hold the keys (its policy's completed_ttl is the retention).
	Client   *client.Client
	Consumer string
	// Rules say which requests need a key, over the defaults (POST and
	// PATCH on every path require one); see Rule.
	Rules []Rule
	// Wait bounds how long a retry waits for the first request's outcome
	// before it gets 409 (default 10s; negative: do not wait).
	Wait time.Duration
	// MaxStoredResponseBytes bounds a stored response body (default 1 MiB).
	// A larger response is passed through and not stored.
	MaxStoredResponseBytes int64
	// MaxRequestBytes bounds the body of a keyed request, which is read
	// whole before the handler sees it (it is fingerprinted first); a
	// larger one gets 413 (default 1 MiB).
	MaxRequestBytes int64
	// LeaseTTL is the lease of a first request (default 30s); it is
	// extended while the handler runs. A gateway that dies mid-request
	// leaves the key in flight (409) until it runs out.
	LeaseTTL time.Duration
	// Timeout bounds a first request's handler (default 60s) through its
	// request's context; a handler that ignores the context runs on, and
	// once it returns after the timeout its key stays in flight until the
	// lease runs out (the outcome is unknown). It is not the client's: a
	// client that goes away does not cancel the handler, so the outcome is
	// still stored for its retry.
	Timeout time.Duration
	// On5xx is what a 5xx response does to its key (default Release).
	On5xx Failure
	// OnUpstreamError is what a failure reported with ReportUpstreamError
	// does to its key (default Release).
	OnUpstreamError Failure
	// IdentityHeader names the header that identifies a client; empty
	// means Authorization. Keys are scoped by a hash of its value.
	IdentityHeader string
	// FingerprintHeaders are request headers added to the fingerprint.
	FingerprintHeaders []string
	// Header names; empty means the default of each.
	KeyHeader       string // Idempotency-Key
	FencingHeader   string // Dedupd-Fencing-Token
	ReplayedHeader  string // Idempotent-Replayed
	RetentionHeader string // Dedupd-Idempotency-Expires
	// ProblemBase prefixes the type URI of each problem (default the
	// anchors of docs/gateway.md on GitHub).
	ProblemBase string
	// Logger receives the failures a client is not told about in detail
	// (default slog.Default()).
	Logger *slog.Logger
}

// Failure is what a failed first request does to its key.
type Failure int

const (
	// Release frees the key: the next retry runs the request again (with
	// the next fencing token). The client got the failure as it was.
	Release Failure = iota
	// Store keeps the response like any other and replays it (a 5xx only;
	// an upstream error has no response worth storing).
	Store
	// Keep leaves the key in flight until its lease runs out: retries get
	// 409 until then, and the request runs again after it.
	Keep
)

// ParseFailure reads "release", "store" or "keep".
func ParseFailure(s string) (Failure, error) {
	switch s {
	case "release":
		return Release, nil
	case "store":
		return Store, nil
	case "keep":
		return Keep, nil
	}
	return 0, fmt.Errorf("%q is not one of release, store, keep", s)
}

// The defaults of Config.
const (
	DefaultKeyHeader       = "Idempotency-Key"
	DefaultFencingHeader   = "Dedupd-Fencing-Token"
	DefaultReplayedHeader  = "Idempotent-Replayed"
	DefaultRetentionHeader = "Dedupd-Idempotency-Expires"
	DefaultProblemBase     = "https://github.com/dedupd/dedupd/blob/main/docs/gateway.md#"
	DefaultMaxBytes        = 1 << 20
	DefaultWait            = 10 * time.Second
	DefaultLeaseTTL        = 30 * time.Second
	DefaultTimeout         = 60 * time.Second
)

// withDefaults checks c and fills in what was left unset.
func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, errors.New("httpidem: Config.Client is required")
	}
	if c.Consumer == "" {
		return c, errors.New("httpidem: Config.Consumer is required")
	}
	if c.OnUpstreamError == Store {
		return c, errors.New("httpidem: OnUpstreamError cannot be Store: there is no response to store")
	}
	for _, r := range c.Rules {
		if err := r.check(); err != nil {
			return c, err
		}
	}
	orDefault(&c.KeyHeader, DefaultKeyHeader)
	orDefault(&c.FencingHeader, DefaultFencingHeader)
	orDefault(&c.ReplayedHeader, DefaultReplayedHeader)
	orDefault(&c.RetentionHeader, DefaultRetentionHeader)
	orDefault(&c.ProblemBase, DefaultProblemBase)
	orDefault(&c.IdentityHeader, "Authorization")
	for _, h := range []*string{&c.KeyHeader, &c.FencingHeader, &c.ReplayedHeader, &c.RetentionHeader, &c.IdentityHeader} {
		*h = http.CanonicalHeaderKey(*h)
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.MaxStoredResponseBytes <= 0 {
		c.MaxStoredResponseBytes = DefaultMaxBytes
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxBytes
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func orDefault(s *string, def string) {
	if strings.TrimSpace(*s) == "" {
		*s = def
	}
}

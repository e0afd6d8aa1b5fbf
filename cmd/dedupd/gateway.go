package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/httpidem"
	"github.com/dedupd/dedupd/internal/dedupdconn"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// gatewayConfig is what `dedupd gateway` is run with.
type gatewayConfig struct {
	listen, upstream        string
	conn                    dedupdconn.Flags
	consumer                string
	wait, leaseTTL, timeout time.Duration
	maxStored, maxRequest   int64
	rules, fpHeaders        []string
	on5xx, onUpstreamError  string
	identityHeader          string
	keyHeader, fenceHeader  string
	keyFrom, webhooks       string
	replayedHeader          string
	retentionHeader         string
	shutdownTimeout         time.Duration
	readyFile               string
	readinessPath           string
	log                     logFlags
}

func newGatewayCommand() *cobra.Command {
	var cfg gatewayConfig
	cmd := &cobra.Command{
		Use:   "gateway --upstream URL --consumer NAME",
		Short: "Reverse proxy that makes any HTTP API idempotent with Idempotency-Key (docs/gateway.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			return runGateway(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "HTTP address to serve on")
	f.StringVar(&cfg.upstream, "upstream", "", "base URL of the API behind the gateway (required)")
	cfg.conn.Register(f, "DEDUPD")
	f.StringVar(&cfg.consumer, "consumer", "", "dedupd consumer that holds the keys; its completed_ttl is the retention (required)")
	f.DurationVar(&cfg.wait, "wait", httpidem.DefaultWait, "how long a retry waits for the first request's outcome before 409 (0: answer 409 at once)")
	f.Int64Var(&cfg.maxStored, "max-stored-response-bytes", httpidem.DefaultMaxBytes, "largest response body stored; a larger one passes through and its key answers 409")
	f.Int64Var(&cfg.maxRequest, "max-request-bytes", httpidem.DefaultMaxBytes, "largest body of a keyed request; a larger one gets 413 before the upstream sees it")
	f.DurationVar(&cfg.leaseTTL, "lease-ttl", httpidem.DefaultLeaseTTL, "lease of a first request, extended while the upstream works")
	f.DurationVar(&cfg.timeout, "timeout", httpidem.DefaultTimeout, "how long the upstream may take on a keyed request")
	f.StringArrayVar(&cfg.rules, "rule", nil, `which requests need a key, over the defaults "POST /=required" and "PATCH /=required": "METHOD /prefix=required|optional|off" (repeatable; METHOD may be *)`)
	f.StringArrayVar(&cfg.fpHeaders, "fingerprint-header", nil, "request header added to the fingerprint (repeatable)")
	f.StringVar(&cfg.on5xx, "on-5xx", "release", "what a 5xx does to its key: release (the retry runs again), store (replayed) or keep (409 until the lease runs out)")
	f.StringVar(&cfg.onUpstreamError, "on-upstream-error", "release", "what an unreachable or failing upstream does to its key: release or keep")
	f.StringVar(&cfg.identityHeader, "identity-header", "", "header that identifies a client, whose hash scopes its keys (default Authorization)")
	f.StringVar(&cfg.keyHeader, "key-header", httpidem.DefaultKeyHeader, "request header carrying the idempotency key")
	f.StringVar(&cfg.keyFrom, "key-from", "", "where the key is instead of --key-header: header:NAME, or json:/pointer (RFC 6901) into the request's JSON body (inbound webhooks)")
	f.StringVar(&cfg.webhooks, "webhooks", "", "inbound webhooks of a provider, keyed by its event id: standard (webhook-id), github (X-GitHub-Delivery), shopify (X-Shopify-Event-Id), svix (svix-id) or stripe (json:/id)")
	f.StringVar(&cfg.fenceHeader, "fencing-header", httpidem.DefaultFencingHeader, "header the gateway adds with the fencing token")
	f.StringVar(&cfg.replayedHeader, "replayed-header", httpidem.DefaultReplayedHeader, "response header set to true on a replay")
	f.StringVar(&cfg.retentionHeader, "retention-header", httpidem.DefaultRetentionHeader, "response header with the HTTP-date until which the key's response is kept")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	f.StringVar(&cfg.readinessPath, "readiness-path", "/.well-known/dedupd-gateway/ready", "path answered by the gateway itself: 200 once dedupd answers its health check, 503 while it does not (for a readiness probe); empty turns it off")
	f.StringVar(&cfg.readyFile, "ready-file", "", "file to write the listen address to once serving (for supervisors and tests)")
	cfg.log.register(f)
	return cmd
}

// middlewareConfig turns the flags into the middleware's configuration.
func (cfg gatewayConfig) middlewareConfig() (httpidem.Config, error) {
	mc := httpidem.Config{
		Consumer: cfg.consumer, Wait: cfg.wait, MaxStoredResponseBytes: cfg.maxStored, MaxRequestBytes: cfg.maxRequest,
		LeaseTTL: cfg.leaseTTL, Timeout: cfg.timeout, IdentityHeader: cfg.identityHeader, FingerprintHeaders: cfg.fpHeaders,
		KeyHeader: cfg.keyHeader, FencingHeader: cfg.fenceHeader, ReplayedHeader: cfg.replayedHeader, RetentionHeader: cfg.retentionHeader,
	}
	if cfg.wait <= 0 {
		mc.Wait = -1
	}
	var err error
	if mc.On5xx, err = httpidem.ParseFailure(cfg.on5xx); err != nil {
		return mc, fmt.Errorf("--on-5xx: %w", err)
	}
	if mc.OnUpstreamError, err = httpidem.ParseFailure(cfg.onUpstreamError); err != nil || mc.OnUpstreamError == httpidem.Store {
		return mc, fmt.Errorf("--on-upstream-error must be release or keep, not %q", cfg.onUpstreamError)
	}
	for _, s := range cfg.rules {
		r, err := httpidem.ParseRule(s)
		if err != nil {
			return mc, fmt.Errorf("--rule: %w", err)
		}
		mc.Rules = append(mc.Rules, r)
	}
	return mc, nil
}

func runGateway(ctx context.Context, cfg gatewayConfig) error {
	logger, err := cfg.log.logger()
	if err != nil {
		return err
	}
	up, err := url.Parse(cfg.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return fmt.Errorf("--upstream %q: want an http:// or https:// URL", cfg.upstream)
	}
	if cfg.consumer == "" {
		return errors.New("--consumer is required")
	}
	mc, err := cfg.middlewareConfig()
	if err != nil {
		return err
	}
	src, err := parseKeySource(cfg.keyFrom, cfg.webhooks)
	if err != nil {
		return err
	}
	if src.header != "" {
		mc.KeyHeader = src.header
	}
	c, err := cfg.conn.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	mc.Client, mc.Logger = c, logger
	m, err := httpidem.New(mc)
	if err != nil {
		return err
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.listen)
	if err != nil {
		return err
	}
	readiness := &dedupdReadiness{cause: "not checked yet"}
	go readiness.watch(ctx, c, cfg.conn.Describe(), logger, func() { checkStoredLimit(ctx, logger, mc, c) })
	keyed := m.Handler(newProxy(up, m))
	if src.pointer != nil {
		keyed = bodyKeyHandler(keyed, m, src, cmp.Or(mc.KeyHeader, httpidem.DefaultKeyHeader), bodyKeyLimit(mc.MaxRequestBytes))
	}
	handler := withReadiness(keyed, cfg.readinessPath, readiness.handler(cfg.conn.Describe()))
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	logger.Info("gateway serving", "listen", lis.Addr().String(), "upstream", up.Redacted(), "dedupd", cfg.conn.Describe(), "consumer", cfg.consumer)
	if cfg.readyFile != "" {
		if err := os.WriteFile(cfg.readyFile, []byte(lis.Addr().String()+"\n"), 0o644); err != nil {
			lis.Close()
			return fmt.Errorf("--ready-file: %w", err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// newProxy is the reverse proxy to the upstream. A failure to get a
// response is reported to the middleware (which applies
// --on-upstream-error) and answered 502 with a problem.
func newProxy(up *url.URL, m *httpidem.Middleware) *httputil.ReverseProxy {
	// One upstream: keep as many idle connections to it as requests run at
	// once (the default transport keeps 2, so a busier gateway would dial
	// the upstream anew for most requests).
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256
	return &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			httpidem.ReportUpstreamError(r, err)
			m.WriteProblem(w, httpidem.ProblemUpstream, http.StatusBadGateway, "Upstream failed",
				"the API behind the gateway did not answer; retry with the same key")
		},
	}
}

// storedHeadroom is room for a stored response's status line and headers
// beside its body.
const storedHeadroom = 64 << 10

// checkStoredLimit warns when the consumer's max_result_bytes cannot hold
// the responses the gateway means to store (such a response is passed
// through and its key marked, as one over --max-stored-response-bytes).
// Reading the policy takes an admin credential; without one it says so.
func checkStoredLimit(ctx context.Context, logger *slog.Logger, mc httpidem.Config, c *client.Client) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := c.Admin().GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: mc.Consumer})
	if err != nil {
		logger.Warn("could not read the consumer's policy to check that its max_result_bytes holds the stored responses "+
			"(a response with its headers over it is passed through and not stored: serve with --max-result-bytes at least want_at_least, "+
			"or raise it with dedupctl policy set --max-result-bytes)",
			"consumer", mc.Consumer, "want_at_least", mc.MaxStoredResponseBytes+storedHeadroom, "err", err)
		return
	}
	if have := p.GetEffective().GetMaxResultBytes(); have < mc.MaxStoredResponseBytes+storedHeadroom {
		logger.Warn("the consumer's max_result_bytes is below --max-stored-response-bytes: larger responses will not be stored "+
			"(raise it with dedupctl policy set, or serve with --max-result-bytes)",
			"consumer", mc.Consumer, "max_result_bytes", have, "want_at_least", mc.MaxStoredResponseBytes+storedHeadroom)
	}
}

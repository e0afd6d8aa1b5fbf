package httpidem_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/client/httpidem"
	"github.com/dedupd/dedupd/client/httpidem/httpidemtest"
)

func TestMain(m *testing.M) { dedupdtest.Main(m) }

// startDedupd starts one dedupd for a test, with room for the 1 MiB
// responses the middleware stores by default.
func startDedupd(t testing.TB) *client.Client {
	addr := dedupdtest.Start(t, dedupdtest.Embedded, "--max-result-bytes", fmt.Sprint(2<<20))
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var consumers atomic.Int64

// configFor turns the suite's options into a Config on a fresh consumer.
func configFor(t *testing.T, c *client.Client, opt httpidemtest.Options) httpidem.Config {
	cfg := httpidem.Config{
		Client: c, Consumer: fmt.Sprintf("http-%d", consumers.Add(1)),
		Wait: opt.Wait, MaxStoredResponseBytes: opt.MaxStoredResponseBytes, MaxRequestBytes: opt.MaxRequestBytes,
		LeaseTTL: opt.LeaseTTL, IdentityHeader: opt.IdentityHeader, FingerprintHeaders: opt.FingerprintHeaders,
	}
	if opt.On5xx != "" {
		f, err := httpidem.ParseFailure(opt.On5xx)
		if err != nil {
			t.Fatal(err)
		}
		cfg.On5xx = f
	}
	for _, s := range opt.Rules {
		r, err := httpidem.ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Rules = append(cfg.Rules, r)
	}
	return cfg
}

// TestConformance runs the suite against the middleware in-process, in
// front of the suite's upstream handler.
func TestConformance(t *testing.T) {
	c := startDedupd(t)
	httpidemtest.Run(t, func(t *testing.T, upstream http.Handler, opt httpidemtest.Options) string {
		m, err := httpidem.New(configFor(t, c, opt))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m.Handler(upstream))
		t.Cleanup(srv.Close)
		return srv.URL
	})
}

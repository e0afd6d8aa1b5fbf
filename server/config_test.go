package server

import (
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/store"
)

func TestConfigValidateRefusesUnworkableValues(t *testing.T) {
	valid := Config{
		Listen: "127.0.0.1:0", DataDir: "d",
		Policy:       store.Policy{DefaultLeaseTTL: time.Second, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour},
		ReapInterval: time.Second, ReapBatch: 10, ShutdownTimeout: time.Second,
		MaxInFlight: 1, HealthInterval: time.Second,
	}
	valid.Limits.MaxLeaseTTL = time.Minute
	valid.Limits.MaxResultBytes = 10
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := map[string]func(*Config){
		"no listen":                      func(c *Config) { c.Listen = "" },
		"no store":                       func(c *Config) { c.DataDir = "" },
		"zero lease":                     func(c *Config) { c.Policy.DefaultLeaseTTL = 0 },
		"default above max":              func(c *Config) { c.Limits.MaxLeaseTTL = time.Millisecond },
		"zero completed ttl":             func(c *Config) { c.Policy.CompletedTTL = 0 },
		"zero rejected ttl":              func(c *Config) { c.Policy.RejectedTTL = 0 },
		"zero released ttl":              func(c *Config) { c.Policy.ReleasedTTL = 0 },
		"zero result limit":              func(c *Config) { c.Limits.MaxResultBytes = 0 },
		"negative reap period":           func(c *Config) { c.ReapInterval = -time.Second },
		"zero reap batch":                func(c *Config) { c.ReapBatch = 0 },
		"no auth on all addrs":           func(c *Config) { c.Listen = "0.0.0.0:7070" },
		"no auth on host name":           func(c *Config) { c.Listen = "dedupd.internal:7070" },
		"no auth on any host":            func(c *Config) { c.Listen = ":7070" },
		"cert without key":               func(c *Config) { c.TLSCert = "cert.pem" },
		"client CA alone":                func(c *Config) { c.TLSClientCA = "ca.pem" },
		"tiny message limit":             func(c *Config) { c.MaxMessageBytes = 1024 },
		"negative rate":                  func(c *Config) { c.RateLimit = -1 },
		"zero inflight":                  func(c *Config) { c.MaxInFlight = 0 },
		"zero health interval":           func(c *Config) { c.HealthInterval = 0 },
		"result limit above the ceiling": func(c *Config) { c.Limits.MaxResultBytes = api.MaxResultBytesCeiling + 1 },
		"negative policy cache ttl":      func(c *Config) { c.PolicyCacheTTL = -time.Second },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			c := valid
			mutate(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("Validate accepted it")
			}
		})
	}
}

// TestConfigLoopbackRule: without --auth-tokens only loopback addresses
// are allowed (for --http-listen too), unless --insecure-no-auth says otherwise; with a token file
// any address is.
func TestConfigLoopbackRule(t *testing.T) {
	base := Config{
		DataDir:      "d",
		Policy:       store.Policy{DefaultLeaseTTL: time.Second, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour},
		ReapInterval: time.Second, ReapBatch: 10, MaxInFlight: 1, HealthInterval: time.Second,
	}
	base.Limits.MaxLeaseTTL, base.Limits.MaxResultBytes = time.Minute, 10
	cases := []struct {
		listen, tokens string
		insecure, ok   bool
		http           string // --http-listen
	}{
		{"127.0.0.1:7070", "", false, true, ""},
		{"127.9.9.9:7070", "", false, true, ""},
		{"[::1]:7070", "", false, true, ""},
		{"localhost:7070", "", false, true, ""},
		{"0.0.0.0:7070", "", false, false, ""},
		{"[::]:7070", "", false, false, ""},
		{"10.1.2.3:7070", "", false, false, ""},
		{"0.0.0.0:7070", "", true, true, ""},
		{"0.0.0.0:7070", "auth.yaml", false, true, ""},
		{"127.0.0.1:7070", "", false, true, "127.0.0.1:7080"},
		{"127.0.0.1:7070", "", false, false, "0.0.0.0:7080"},
		{"127.0.0.1:7070", "", true, true, "0.0.0.0:7080"},
		{"127.0.0.1:7070", "auth.yaml", false, true, "0.0.0.0:7080"},
	}
	for _, tc := range cases {
		c := base
		c.Listen, c.HTTPListen, c.AuthTokens, c.InsecureNoAuth = tc.listen, tc.http, tc.tokens, tc.insecure
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("listen %s, http %q, tokens %q, insecure %v: Validate = %v, want ok=%v", tc.listen, tc.http, tc.tokens, tc.insecure, err, tc.ok)
		}
	}
}

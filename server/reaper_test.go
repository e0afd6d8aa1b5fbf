package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestReapOnceDrainsTheBacklogInBatches: one pass deletes every expired
// record, however many batches that takes, and nothing live.
func TestReapOnceDrainsTheBacklogInBatches(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	short := store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Millisecond, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	for i := range 25 {
		key := fmt.Sprintf("expired-%d", i)
		res, err := st.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Policy: short})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Complete(ctx, store.CompleteParams{Consumer: "c", Key: key,
			FencingToken: res.Record.FencingToken, Policy: short}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "live", Policy: short}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)

	deleted, err := reapOnce(ctx, st, 10)
	if err != nil || deleted != 25 {
		t.Fatalf("reapOnce = %d, %v; want all 25 expired records", deleted, err)
	}
	if _, err := st.Lookup(ctx, "c", "live"); err != nil {
		t.Fatalf("live record after reaping: %v", err)
	}
	if deleted, err := reapOnce(ctx, st, 10); err != nil || deleted != 0 {
		t.Fatalf("second pass = %d, %v; want nothing left to delete", deleted, err)
	}
}

func TestConfigValidateRefusesUnworkableValues(t *testing.T) {
	valid := Config{
		Listen: "127.0.0.1:0", DataDir: "d",
		Policy:       store.Policy{DefaultLeaseTTL: time.Second, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour},
		ReapInterval: time.Second, ReapBatch: 10, ShutdownTimeout: time.Second,
	}
	valid.Limits.MaxLeaseTTL = time.Minute
	valid.Limits.MaxResultBytes = 10
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := map[string]func(*Config){
		"no listen":            func(c *Config) { c.Listen = "" },
		"no store":             func(c *Config) { c.DataDir = "" },
		"zero lease":           func(c *Config) { c.Policy.DefaultLeaseTTL = 0 },
		"default above max":    func(c *Config) { c.Limits.MaxLeaseTTL = time.Millisecond },
		"zero completed ttl":   func(c *Config) { c.Policy.CompletedTTL = 0 },
		"zero rejected ttl":    func(c *Config) { c.Policy.RejectedTTL = 0 },
		"zero released ttl":    func(c *Config) { c.Policy.ReleasedTTL = 0 },
		"zero result limit":    func(c *Config) { c.Limits.MaxResultBytes = 0 },
		"negative reap period": func(c *Config) { c.ReapInterval = -time.Second },
		"zero reap batch":      func(c *Config) { c.ReapBatch = 0 },
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

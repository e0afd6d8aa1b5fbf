package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestShutdownUnderLoadKeepsAcknowledgedOutcomes sends SIGTERM while
// callers claim and complete keys as fast as they can. The server must exit
// cleanly, and after a restart every Complete that was acknowledged must be
// there with its bytes: graceful shutdown may refuse new calls, never lose
// answered ones.
func TestShutdownUnderLoadKeepsAcknowledgedOutcomes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		srv := startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))

		var mu sync.Mutex
		acked := map[string][]byte{}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					key := fmt.Sprintf("w%d-%d", w, i)
					result := []byte("result of " + key)
					if !claimAndComplete(c, key, result) {
						return // the server is going away
					}
					mu.Lock()
					acked[key] = result
					mu.Unlock()
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		srv.waitExit(t)
		if len(acked) == 0 {
			t.Fatal("no Complete was acknowledged before shutdown; the test proves nothing")
		}

		srv = startDedupd(t, flags...)
		c = dedupv1.NewDedupServiceClient(srv.dial(t))
		for key, want := range acked {
			got, err := c.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: consumer, Key: key})
			if err != nil || got.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED || !bytes.Equal(got.GetRecord().GetResult(), want) {
				t.Fatalf("acknowledged %s after restart: %v, %v", key, got, err)
			}
		}
		t.Logf("%d acknowledged outcomes survived the shutdown", len(acked))
		srv.stop(t)
	})
}

func claimAndComplete(c dedupv1.DedupServiceClient, key string, result []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key})
	if err != nil {
		return false
	}
	_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key,
		FencingToken: got.GetFencingToken(), Result: result})
	return err == nil
}

package main

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestServeWithoutAuthOnlyOnLoopback: with no --auth-tokens, dedupd
// refuses a non-loopback address unless --insecure-no-auth is given, and
// warns that auth is off whenever it serves without it.
func TestServeWithoutAuthOnlyOnLoopback(t *testing.T) {
	out, err := runDedupd(t, "serve", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir())
	if err == nil || !strings.Contains(out, "refusing to serve without authentication") {
		t.Fatalf("serve on 0.0.0.0 without auth: err=%v, output:\n%s", err, out)
	}
	p := startDedupd(t, "--listen", "0.0.0.0:0", "--insecure-no-auth", "--data-dir", t.TempDir())
	p.stop(t)
	if !strings.Contains(p.Logs.String(), "authentication is off") {
		t.Fatalf("no warning that auth is off; logs:\n%s", p.Logs)
	}
	p = startDedupd(t, "--data-dir", t.TempDir()) // loopback
	p.stop(t)
	if !strings.Contains(p.Logs.String(), "authentication is off") {
		t.Fatalf("no warning that auth is off on loopback; logs:\n%s", p.Logs)
	}
}

// TestSIGHUPReloadsTokensWithoutDroppingCalls: claims run on several
// connections while the token file changes and dedupd gets SIGHUP. Every
// call is either accepted (old rules) or PERMISSION_DENIED (new rules);
// once the new rules are seen they stay. A broken file then keeps them.
// Tokens never appear in the logs.
func TestSIGHUPReloadsTokensWithoutDroppingCalls(t *testing.T) {
	const token = "tok-sighup-4f1c2a9d"
	path := opsAuthFile(t, fmt.Sprintf("tokens: [{sha256: %s, consumers: [inventory]}]\n", opsSHA256(token)))
	p := startDedupd(t, "--data-dir", t.TempDir(), "--auth-tokens", path)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		denied  = make(chan struct{})
		once    sync.Once
		abort   = make(chan struct{})
		badErrs []error
	)
	for w := range 4 {
		c := dedupv1.NewDedupServiceClient(p.dial(t))
		wg.Go(func() {
			sawDenied := false
			for i := 0; ; i++ {
				select {
				case <-abort:
					return
				default:
				}
				ctx, cancel := opsBearer(token)
				_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: fmt.Sprintf("w%d-%d", w, i)})
				cancel()
				switch code := status.Code(err); {
				case code == codes.PermissionDenied:
					sawDenied = true
					once.Do(func() { close(denied) })
				case code == codes.OK && !sawDenied:
				default:
					mu.Lock()
					badErrs = append(badErrs, fmt.Errorf("call %d after denied=%v: %w", i, sawDenied, err))
					mu.Unlock()
					return
				}
				if sawDenied && i%50 == 49 {
					return // enough calls under the new rules
				}
			}
		})
	}
	opsRewrite(t, path, fmt.Sprintf("tokens: [{sha256: %s, consumers: [payments]}]\n", opsSHA256(token)))
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-denied:
	case <-time.After(30 * time.Second):
		close(abort)
		wg.Wait()
		t.Fatalf("no call was denied within 30s of SIGHUP; logs:\n%s", p.Logs)
	}
	wg.Wait()
	for _, err := range badErrs {
		t.Error(err)
	}

	opsRewrite(t, path, "tokens: [{sha256: broken}]\n")
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	opsEventually(t, "logging the failed reload", func() bool { return strings.Contains(p.Logs.String(), "reload failed") })
	c := dedupv1.NewDedupServiceClient(p.dial(t))
	ctx, cancel := opsBearer(token)
	defer cancel()
	if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "payments", Key: "after-bad-file"}); err != nil {
		t.Fatalf("after a broken file: %v, want the rules in force (payments allowed)", err)
	}
	p.stop(t)
	if strings.Contains(p.Logs.String(), token) {
		t.Fatal("the token appears in the logs")
	}
}

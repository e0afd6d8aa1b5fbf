package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// BenchmarkHTTPClaimReplay is a replayed Claim from 32 callers over
// loopback TCP to a whole server (Run), over gRPC and over the HTTP
// listener as JSON on HTTP/1.1 and on h2c: what the transcoder costs
// beside the gRPC path. Client and server share the process, so the
// figures count both sides. cpu-ns/op, the process's CPU time per call, is
// the one to compare on a shared machine: ns/op there is mostly waiting
// for a core.
//
//	go test -run '^$' -bench HTTPClaimReplay -benchtime 3s ./server
func BenchmarkHTTPClaimReplay(b *testing.B) {
	cfg := testConfig()
	cfg.GroupCommit, cfg.ReplayCacheBytes, cfg.ReplayCacheTTL = true, 32<<20, time.Minute
	cfg.MaxInFlight, cfg.PolicyCacheTTL = 1024, 5*time.Second // the defaults of `dedupd serve`
	grpcAddr, base := runHTTPServer(b, cfg)
	c := dedupv1.NewDedupServiceClient(dialServer(b, grpcAddr))
	ctx := context.Background()
	const replayKeys = 1000
	digest := []byte("0123456789abcdef0123456789abcdef")
	keys := make([]string, replayKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("replay-", i)
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: keys[i], Digest: digest})
		if err == nil {
			_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "bench", Key: keys[i],
				FencingToken: res.GetFencingToken(), Result: make([]byte, 64)})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	run := func(name string, op func(key string) error) {
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(max(1, 32/testingCPUs()))
			b.ReportAllocs()
			before := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(keys[next.Add(1)%replayKeys]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(processCPU(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
	run("grpc", func(key string) error {
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key, Digest: digest})
		if err == nil && res.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
			err = fmt.Errorf("replay: %v", res.GetOutcome())
		}
		return err
	})
	h1, h2c := new(http.Protocols), new(http.Protocols)
	h1.SetHTTP1(true)
	h2c.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name      string
		protocols *http.Protocols
	}{{"http1-json", h1}, {"h2c-json", h2c}} {
		// At most 32 connections: one address's share of --max-connections.
		transport := &http.Transport{Protocols: tc.protocols, MaxConnsPerHost: DefaultMaxConnectionsPerPeer, MaxIdleConnsPerHost: DefaultMaxConnectionsPerPeer}
		client := &http.Client{Transport: transport}
		b.Cleanup(transport.CloseIdleConnections)
		run(tc.name, func(key string) error {
			body := `{"consumer":"bench","key":"` + key + `","digest":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}`
			resp, err := client.Post(base+"/dedup.v1.DedupService/Claim", "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"OUTCOME_COMPLETED"`))) {
				err = fmt.Errorf("replay: HTTP %d %s", resp.StatusCode, got)
			}
			return err
		})
		transport.CloseIdleConnections() // give the address's share back
	}
}

// processCPU is the CPU time, user and system, the process has used.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

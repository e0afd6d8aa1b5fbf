package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestUnreadRepliesAreBounded is the acceptance test of issue 11, item 1:
// callers that ask for pages of large records and never read the replies
// pin no more server memory than docs/operations.md says, measured as the
// resident set of a real dedupd (/proc/PID/status), not as a time.
//
// The callers speak raw HTTP/2 and never read their socket, which is what
// pins a reply: grpc-go holds each encoded reply whole until the client
// takes it. They open far more connections and streams than the server
// allows; the documented bound is connections × streams × 3 × reply bytes
// (an unread reply, and a call's records and their wire form while it
// runs).
func TestUnreadRepliesAreBounded(t *testing.T) {
	const (
		conns, streams = 2, 4     // the server's limits
		pageBytes      = 1 << 20  // --max-page-bytes
		resultBytes    = 60 << 10 // each stored result
		records        = 300      // about 18 MB: one page of all of them without a byte bound
		callerConns    = 6        // what the callers open...
		callerStreams  = 12       // ...and on each connection
		bound          = conns * streams * 3 * pageBytes
	)
	p := startDedupd(t, "--data-dir", t.TempDir(), "--embedded-sync", "normal", "--replay-cache-bytes", "0",
		"--metrics-listen", "127.0.0.1:0",
		"--max-connections", strconv.Itoa(conns), "--max-concurrent-streams", strconv.Itoa(streams),
		"--max-page-bytes", strconv.Itoa(pageBytes))
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c := dedupv1.NewDedupServiceClient(conn)
	ctx := context.Background()
	result := bytes.Repeat([]byte{'r'}, resultBytes)
	var (
		wg      sync.WaitGroup
		request []byte
	)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < records; i += 8 {
				key := fmt.Sprintf("k%04d", i)
				got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key})
				if err == nil {
					_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: got.GetFencingToken(), Result: result})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Warm up: list everything once through a caller that reads, so the
	// baseline holds the store's caches and the server's pools.
	for tok := ""; ; {
		resp, err := c.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer, PageSize: 50, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	conn.Close() // its connection would take one of the server's few
	baseline := residentBytes(t, p.Cmd.Process.Pid)
	handledBefore := listRecordsHandled(t, p)

	request, err = proto.Marshal(&dedupv1.ListRecordsRequest{Consumer: consumer, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for range callerConns {
		stallingCaller(t, p.Addr, request, callerStreams)
	}
	// The limits let conns × streams calls through; wait until the server
	// has answered that many (their replies then sit unread).
	opsEventually(t, "the stalled calls to be answered", func() bool {
		return listRecordsHandled(t, p)-handledBefore >= conns*streams
	})
	grown := residentBytes(t, p.Cmd.Process.Pid) - baseline
	t.Logf("resident set: %d MiB at baseline, +%d MiB with %d unread pages; documented bound +%d MiB",
		baseline>>20, grown>>20, listRecordsHandled(t, p)-handledBefore, bound>>20)
	if grown > bound {
		t.Fatalf("unread replies grew the resident set by %d MiB, over the documented bound of %d MiB", grown>>20, bound>>20)
	}
}

// stallingCaller opens a connection and sends n ListRecords calls on it,
// then never reads: the server's replies stay in the server.
func stallingCaller(t *testing.T, addr string, request []byte, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Every write goes to w, whose Flush at the end reports any error;
	// until then they can fail only on a bad argument, which must is for.
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	w := bufio.NewWriter(conn)
	_, err = w.WriteString(http2.ClientPreface)
	must(err)
	fr := http2.NewFramer(w, nil)
	must(fr.WriteSettings())
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	body := make([]byte, 5+len(request)) // the gRPC frame: uncompressed, length, message
	binary.BigEndian.PutUint32(body[1:5], uint32(len(request)))
	copy(body[5:], request)
	for i := range n {
		block.Reset()
		for _, f := range [][2]string{
			{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
			{":path", "/dedup.v1.DedupService/ListRecords"},
			{"content-type", "application/grpc"}, {"te", "trailers"},
		} {
			must(enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		id := uint32(2*i + 1)
		must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}))
		must(fr.WriteData(id, true, body))
	}
	must(w.Flush())
}

// residentBytes is VmRSS of a process, from /proc.
func residentBytes(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// listRecordsHandled is how many ListRecords calls the server has answered.
func listRecordsHandled(t *testing.T, p *process) int {
	t.Helper()
	return int(opsValue(opsScrape(t, p.opsMetricsAddr(t)), "grpc_server_handled_total", map[string]string{"grpc_method": "ListRecords"}))
}

package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// stallServer serves handler behind stallBound(stall) over HTTP/1.1 and
// h2c, and returns its address.
func stallServer(t *testing.T, stall time.Duration, handler http.HandlerFunc) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: stallBound(handler, stall), Protocols: protocols, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Close() })
	return lis.Addr().String()
}

// TestStallBoundCutsAReplyNobodyReads: a caller that asks for a large
// reply and never reads it does not hold the handler (and the reply) past
// the stall bound, over HTTP/1.1 and HTTP/2: the handler's write fails,
// and it returns. The oracle is the write's error, however long the
// machine takes to get there.
func TestStallBoundCutsAReplyNobodyReads(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1.1", true: "h2c"}[h2], func(t *testing.T) {
			written := make(chan error, 1)
			addr := stallServer(t, 100*time.Millisecond, func(w http.ResponseWriter, _ *http.Request) {
				chunk := make([]byte, 64<<10)
				for range 1 << 12 { // 256 MiB: far more than the socket buffers and windows hold
					if _, err := w.Write(chunk); err != nil {
						written <- err
						return
					}
				}
				written <- nil
			})
			p := new(http.Protocols)
			if h2 {
				p.SetUnencryptedHTTP2(true)
			} else {
				p.SetHTTP1(true)
			}
			client := &http.Client{Transport: &http.Transport{Protocols: p}}
			resp, err := client.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close() // never read
			select {
			case err := <-written:
				if err == nil {
					t.Fatal("256 MiB written to a caller that reads nothing")
				}
			case <-time.After(answerDeadline):
				t.Fatal("the handler is still writing to a caller that reads nothing")
			}
		})
	}
}

// TestStallBoundLetsAQuietStreamLive: on HTTP/2 the bound runs only while
// a write waits, so a server stream that is quiet for longer than the
// bound between its messages (Purge between batches) is not cut.
func TestStallBoundLetsAQuietStreamLive(t *testing.T) {
	const stall = 20 * time.Millisecond
	addr := stallServer(t, stall, func(w http.ResponseWriter, _ *http.Request) {
		for range 3 {
			if _, err := w.Write([]byte("tick\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(10 * stall) // quiet well past the bound
		}
	})
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Protocols: h2c}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	var got []byte
	for err == nil {
		var n int
		n, err = resp.Body.Read(buf)
		got = append(got, buf[:n]...)
	}
	if !errors.Is(err, io.EOF) || string(got) != "tick\ntick\ntick\n" || resp.ProtoMajor != 2 {
		t.Fatalf("HTTP/%d %q ending in %v, want three ticks over HTTP/2", resp.ProtoMajor, got, err)
	}
}

package httpidem_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/client/httpidem"
)

// BenchmarkFirstRequest is a keyed POST with a fresh key through the
// middleware (claim, handler, Complete), against a real dedupd; with
// -cpuprofile it shows where the middleware's CPU goes.
func BenchmarkFirstRequest(b *testing.B) {
	c := startDedupd(b)
	m, err := httpidem.New(httpidem.Config{Client: c, Consumer: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1}`)
	})))
	defer srv.Close()
	var seq atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"sku":"book"}`))
			req.Header.Set("Idempotency-Key", fmt.Sprint("k", seq.Add(1)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

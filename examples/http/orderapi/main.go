// Command orderapi is a small order API that knows nothing of idempotency:
// POST /orders places an order (it takes --delay, as a slow payment call
// would), GET /orders lists them. examples/http/run.sh puts `dedupd
// gateway` in front of it, unchanged, and shows a retrying client placing
// one order through the gateway and several without it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

type order struct {
	ID      int             `json:"id"`
	Request json.RawMessage `json:"request"`
}

type api struct {
	mu     sync.Mutex
	orders []order
	delay  time.Duration
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path != "/orders":
		http.NotFound(w, r)
	case r.Method == http.MethodGet:
		a.mu.Lock()
		defer a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a.orders)
	case r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || !json.Valid(body) {
			http.Error(w, "the order must be JSON", http.StatusBadRequest)
			return
		}
		time.Sleep(a.delay) // the payment provider is slow today
		a.mu.Lock()
		o := order{ID: len(a.orders) + 1, Request: body}
		a.orders = append(a.orders, o)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(o)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	ready := flag.String("ready-file", "", "file to write the address to once serving")
	delay := flag.Duration("delay", 0, "how long placing an order takes")
	flag.Parse()
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(lis.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintln(os.Stderr, "orderapi serving on", lis.Addr())
	srv := &http.Server{Handler: &api{delay: *delay}, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

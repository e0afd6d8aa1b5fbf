package httpidemtest

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Retries that race each other, and a client that gives up mid-request:
// the upstream still sees each key's request exactly once.

var _ = add("racing retries: one upstream call, every client the same response", Options{Wait: time.Minute}, func(s *session) {
	const clients = 8
	for round := range 3 {
		key := fmt.Sprintf("k-race-%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		replies := make([]reply, clients)
		for i := range clients {
			wg.Go(func() {
				<-start
				replies[i] = s.do(post("/orders", key, `{"sku":"race"}`))
			})
		}
		close(start)
		wg.Wait()
		fresh := 0
		for _, r := range replies {
			if r.Status != http.StatusCreated || string(r.Body) != string(replies[0].Body) {
				s.t.Fatalf("round %d: replies differ: %d %q and %d %q", round, r.Status, r.Body, replies[0].Status, replies[0].Body)
			}
			if !r.replayed() {
				fresh++
			}
		}
		if fresh != 1 {
			s.t.Fatalf("round %d: %d replies were not replays, want exactly 1", round, fresh)
		}
		s.calls(round+1, "one call per key, however many clients raced")
	}
})

var _ = add("a client that drops the connection after sending: its retry gets the first run's response", Options{
	Wait: time.Minute}, func(s *session) {
	u, err := url.Parse(s.base)
	if err != nil {
		s.t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		s.t.Fatal(err)
	}
	body := `{"sku":"dropped"}`
	fmt.Fprintf(conn, "POST /slow HTTP/1.1\r\nHost: %s\r\nIdempotency-Key: k-drop\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", u.Host, len(body), body)
	<-s.up.Entered() // the request is at the upstream
	conn.Close()     // and the client gives up, as after a timeout
	// Retries race the first run while it is still going, then after it.
	var wg sync.WaitGroup
	replies := make([]reply, 3)
	for i := range replies {
		wg.Go(func() { replies[i] = s.do(post("/slow", "k-drop", body)) })
	}
	s.up.Release()
	wg.Wait()
	late := s.do(post("/slow", "k-drop", body))
	for _, r := range append(slices.Clip(replies), late) {
		if r.Status != http.StatusCreated || string(r.Body) != "slow call 1" || !r.replayed() {
			s.t.Fatalf("retry after the drop: %d %q replayed=%v; want the first run's 201, replayed", r.Status, r.Body, r.replayed())
		}
	}
	s.calls(1, "the dropped request ran once; its retries were replays")
})

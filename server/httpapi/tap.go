package httpapi

import (
	"net/http"

	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// tapped runs a tap on each call as it arrives, before its body is read or
// buffered, as grpc-go does for the calls on its own listener (ServeHTTP
// runs none). A refusal is answered in the caller's protocol, Connect or
// gRPC-Web, as any other error; a call let through carries the context the
// tap returned into the gRPC server, whose interceptors count it down.
type tapped struct {
	next http.Handler
	tap  tap.ServerInHandle
}

func (t tapped) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !rpcPath(r.URL.Path) {
		t.next.ServeHTTP(w, r) // names no method: the transcoder answers 404
		return
	}
	ctx, err := t.tap(r.Context(), &tap.Info{FullMethodName: r.URL.Path})
	if err != nil {
		_ = errorWriter.Write(w, r, connectError(status.Convert(err)))
		return
	}
	t.next.ServeHTTP(w, r.WithContext(ctx))
}

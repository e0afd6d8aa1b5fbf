package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
)

// tapped runs a tap on each call before handing it to the gRPC server, as
// grpc-go does for the calls on its own listener (ServeHTTP runs none). It
// sits behind the transcoder, so that a refusal is written as a gRPC
// answer and reaches the caller in the caller's protocol, Connect or
// gRPC-Web, like any other error.
type tapped struct {
	next http.Handler
	tap  tap.ServerInHandle
}

func (t tapped) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, err := t.tap(r.Context(), &tap.Info{FullMethodName: r.URL.Path})
	if err != nil {
		writeGRPCError(w, status.Convert(err))
		return
	}
	t.next.ServeHTTP(w, r.WithContext(ctx))
}

// writeGRPCError answers a gRPC call with st alone: a "trailers-only"
// response, whose headers carry the status (gRPC over HTTP/2, "Responses").
func writeGRPCError(w http.ResponseWriter, st *status.Status) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(int(st.Code())))
	h.Set("Grpc-Message", percentEncode(st.Message()))
	if len(st.Proto().GetDetails()) > 0 {
		if bin, err := proto.Marshal(st.Proto()); err == nil {
			h.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(bin))
		}
	}
	w.WriteHeader(http.StatusOK)
}

// percentEncode is the Grpc-Message encoding: bytes outside printable
// ASCII, and '%' itself, as %XX.
func percentEncode(msg string) string {
	const hex = "0123456789ABCDEF"
	out := make([]byte, 0, len(msg))
	for i := range len(msg) {
		c := msg[i]
		if c >= ' ' && c <= '~' && c != '%' {
			out = append(out, c)
			continue
		}
		out = append(out, '%', hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

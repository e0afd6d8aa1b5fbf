package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// A Connect unary request too large to take is answered 413 Content Too
// Large, not the 429 the transcoder maps RESOURCE_EXHAUSTED to: 429 tells a
// client to retry later a request that can never succeed. The Connect code
// stays resource_exhausted (clients read the body's code), the message
// says which server setting bounds it (Options.TooLarge). A request is too
// large when its body is over Options.MaxBodyBytes (announced or read) or
// when the message it holds is over the gRPC server's message limit,
// which grpc-go refuses with a text of its own (grpcTooLarge). Rate limits
// and the in-flight bound keep their 429.

// grpcTooLarge starts grpc-go's refusal of a message over its limit;
// bufferTooLarge is in the transcoder's refusal of a body over its buffer.
const (
	grpcTooLarge   = "grpc: received message larger than max"
	bufferTooLarge = "max buffer size"
)

// errorBodyCap bounds the error body held back to be read: a Connect
// error is a short JSON object.
const errorBodyCap = 8 << 10

// tooLargeAs413 answers a too-large Connect unary request 413 with
// message; other requests pass through untouched.
func tooLargeAs413(next http.Handler, limit uint32, message string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !connectUnary(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > int64(limit) {
			writeTooLarge(w, message)
			return
		}
		body := &countingBody{ReadCloser: r.Body, limit: int64(limit)}
		r.Body = body
		rw := &tooLargeWriter{ResponseWriter: w, body: body}
		next.ServeHTTP(rw, r)
		rw.finish(message)
	})
}

// connectUnary reports whether r is a Connect unary call (as DefaultConnect
// leaves it): the protocol header and a unary body type.
func connectUnary(r *http.Request) bool {
	return r.Header.Get("Connect-Protocol-Version") != "" && unaryConnectBody(r.Header.Values("Content-Type")) != ""
}

func writeTooLarge(w http.ResponseWriter, message string) {
	body, _ := json.Marshal(map[string]string{"code": "resource_exhausted", "message": message})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(append(body, '\n'))
}

// countingBody notes whether more than limit bytes were read.
type countingBody struct {
	io.ReadCloser
	limit, read int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) over() bool { return b.read > b.limit }

// tooLargeWriter holds back a 429 answer until it is known whether it
// refuses a request for its size; any other answer passes at once.
type tooLargeWriter struct {
	http.ResponseWriter
	body    *countingBody
	held    bool
	status  int
	heldOut bytes.Buffer
}

func (w *tooLargeWriter) WriteHeader(status int) {
	if status == http.StatusTooManyRequests {
		w.held, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *tooLargeWriter) Write(p []byte) (int, error) {
	if !w.held {
		return w.ResponseWriter.Write(p)
	}
	if w.heldOut.Len()+len(p) > errorBodyCap {
		w.release()
		return w.ResponseWriter.Write(p)
	}
	return w.heldOut.Write(p)
}

// release sends what was held back as it was.
func (w *tooLargeWriter) release() {
	if !w.held {
		return
	}
	w.held = false
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(w.heldOut.Bytes())
}

// finish decides a held-back 429: 413 with message when the request was
// too large, the 429 as it was otherwise.
func (w *tooLargeWriter) finish(message string) {
	if !w.held {
		return
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(w.heldOut.Bytes(), &e)
	if w.body.over() || strings.HasPrefix(e.Message, grpcTooLarge) || strings.Contains(e.Message, bufferTooLarge) {
		w.held = false
		w.Header().Del("Content-Length")
		writeTooLarge(w.ResponseWriter, message)
		return
	}
	w.release()
}

// Flush waits for finish while a 429 is held back (the transcoder flushes
// its error answer, which is short).
func (w *tooLargeWriter) Flush() {
	if w.held {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *tooLargeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

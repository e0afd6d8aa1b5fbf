package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/hostcheck"
	"github.com/dedupd/dedupd/server/httpapi"
	"github.com/dedupd/dedupd/server/openapi"
)

// The HTTP listener's time bounds (docs/http.md, "Limits"). The header
// deadline is --handshake-timeout (TLS included), the idle one
// --max-connection-idle, as on the gRPC listener.
const (
	// httpReadTimeout bounds how long a request, body included, may take
	// to arrive: long enough for the largest body over a slow link.
	httpReadTimeout = time.Minute
	// httpReplyStall bounds how long a reply may wait for its caller to
	// read it: a caller that stops reading gives its connection (and the
	// reply it holds) back after that.
	httpReplyStall = 30 * time.Second
	// httpMaxHeaderBytes bounds a request's header block; a bearer token
	// and the Connect headers need a small part of it.
	httpMaxHeaderBytes = 64 << 10
)

// httpBodyBytes bounds a request or reply body on the HTTP listener: the
// larger of what a request needs and what the JSON of the largest page
// needs. JSON carries bytes fields in base64 (4/3 as long) and names the
// fields a caller sets, so a request holding a message within
// --max-message-bytes may be up to twice as large, with a MiB for the
// names of a batch's many small items. A reply writes every field, named:
// a page of the smallest records is about 4.6 times its protobuf. Every
// other reply is smaller than a page or mostly bytes.
func httpBodyBytes(cfg Config) uint32 {
	m := int64(maxMessageBytes(cfg))
	request := 2*m + 1<<20
	page := 5 * min(m, api.PageBytesCeiling)
	return uint32(min(max(request, page), math.MaxUint32))
}

// httpAPI is the HTTP listener in front of the gRPC server.
type httpAPI struct {
	srv *http.Server
	lis net.Listener
}

// newHTTPAPI serves srv's services on lis (bound to cfg.HTTPListen by
// bindListeners, with the connection bounds of the gRPC listener) over
// HTTP/1.1 and HTTP/2 (h2c without TLS), and TLS when it has TLS. It serves
// once start is called; nil when lis is nil (no --http-listen).
func newHTTPAPI(cfg Config, g guards, srv *grpc.Server, lis net.Listener, log *slog.Logger) (*httpAPI, error) {
	if lis == nil {
		return nil, nil //nolint:nilnil // no listener asked for is not an error
	}
	opts := httpapi.Options{MaxBodyBytes: httpBodyBytes(cfg), TooLarge: fmt.Sprintf(
		"request too large: a message may hold at most %d bytes (dedupd serve --max-message-bytes), its JSON body at most %d",
		maxMessageBytes(cfg), httpBodyBytes(cfg))}
	if g.inflight != nil {
		opts.Tap = g.inflight.Tap(diagnosticMethod)
	}
	api, err := httpapi.Handler(srv, opts)
	if err != nil {
		return nil, fmt.Errorf("--http-listen: %w", err)
	}
	handler, err := httpHosts(cfg, g, withConsole(withOpenAPI(api), g.auth))
	if err != nil {
		return nil, err
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if g.certs != nil {
		lis = tls.NewListener(lis, g.certs.configFor("h2", "http/1.1"))
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true) // h2c, with prior knowledge
	}
	hs := &http.Server{
		Handler:           stallBound(handler, httpReplyStall),
		Protocols:         protocols,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: cmp.Or(cfg.MaxConcurrentStreams, DefaultMaxConcurrentStreams)},
		ReadHeaderTimeout: cmp.Or(cfg.HandshakeTimeout, DefaultHandshakeTimeout),
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       cmp.Or(cfg.MaxConnectionIdle, DefaultMaxConnectionIdle),
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return &httpAPI{srv: hs, lis: lis}, nil
}

// httpHosts puts the Host check (server/hostcheck) in front of every
// route of the HTTP listener, API and console alike, when the listener
// serves without auth: then any page the operator's browser opens could
// otherwise reach it by DNS rebinding and act as admin. With auth it is
// left off unless --http-allowed-hosts is given: a rebinding page has no
// credential (the console keeps its token in the listener's own origin's
// sessionStorage, and a browser does not send it a client certificate
// for a name the server's certificate does not match), and a proxy or a
// client addressing the server by any name keeps working. The host of
// --http-listen is allowed too when it is a name: the operator chose it.
func httpHosts(cfg Config, g guards, next http.Handler) (http.Handler, error) {
	if g.auth != nil && len(cfg.HTTPAllowedHosts) == 0 {
		return next, nil
	}
	names := cfg.HTTPAllowedHosts
	if host, _, err := net.SplitHostPort(cfg.HTTPListen); err == nil && host != "" {
		if _, ipErr := netip.ParseAddr(host); ipErr != nil { // an IP is allowed anyway
			names = append(slices.Clip(names), host)
		}
	}
	hosts, err := hostcheck.New(names)
	if err != nil {
		return nil, err
	}
	return hostcheck.Guard(hosts, next), nil
}

// addr is the bound address, "" when there is no HTTP listener.
func (h *httpAPI) addr() string {
	if h == nil {
		return ""
	}
	return h.lis.Addr().String()
}

// start serves in the background; a failure goes to errs.
func (h *httpAPI) start(errs chan<- error) {
	if h == nil {
		return
	}
	go func() {
		if err := h.srv.Serve(h.lis); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("serving HTTP: %w", err)
		}
	}()
}

// shutdown stops accepting, lets the calls in flight finish until
// deadline, then closes what is left. It must run before the gRPC server's
// GracefulStop: that cancels every call still running through ServeHTTP.
func (h *httpAPI) shutdown(deadline time.Time, log *slog.Logger) {
	if h == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown timeout passed; closing HTTP calls still in flight")
		h.srv.Close()
	}
}

// close stops at once (startup failed after the listener opened).
func (h *httpAPI) close() {
	if h != nil {
		h.srv.Close()
		h.lis.Close()
	}
}

// withOpenAPI serves the API's OpenAPI description at openapi.Path, and
// every other path as the API.
func withOpenAPI(api http.Handler) http.Handler {
	doc := openapi.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == openapi.Path {
			doc.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// stallBound cuts a reply that its caller has not read for stall: each
// write must finish within stall of its start. Between writes there is no
// deadline on HTTP/2 (a server stream may be quiet while its work runs);
// on HTTP/1.1 the last one stays, so that the final flush, which the
// server makes after the handler returns, is bounded too, and each request
// on a kept-alive connection sets its own before it writes.
func stallBound(next http.Handler, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall, h2: r.ProtoMajor == 2}
		next.ServeHTTP(sw, r)
		if !sw.h2 {
			sw.arm() // for the final flush
		}
	})
}

type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	h2    bool
}

func (w *stallWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.stall)) }

func (w *stallWriter) disarm() {
	if w.h2 {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
}

func (w *stallWriter) Write(p []byte) (int, error) {
	w.arm()
	defer w.disarm()
	return w.ResponseWriter.Write(p)
}

// Flush is what lets a server stream's messages out one by one.
func (w *stallWriter) Flush() {
	w.arm()
	defer w.disarm()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

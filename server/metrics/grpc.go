package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPCMetrics is the standard grpc_server_* set: the names, labels and help
// of go-grpc-middleware's providers/prometheus, which dedupd used before,
// with a handling-time histogram. That provider looks up every series by
// its label values on every call; here each method's series are looked up
// once and kept, so a call costs a map read and the increments.
type GRPCMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	seconds                          *prometheus.HistogramVec
	methods                          sync.Map // full method name -> *methodSeries
}

// methodSeries are one method's series.
type methodSeries struct {
	started, received, sent prometheus.Counter
	seconds                 prometheus.Observer
	handled                 [codes.Unauthenticated + 1]prometheus.Counter // by code
	labels                  [3]string                                     // type, service, method
}

func newGRPCMetrics() *GRPCMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &GRPCMetrics{
		started:  counter("grpc_server_started_total", "Total number of RPCs started on the server.", labels),
		handled:  counter("grpc_server_handled_total", "Total number of RPCs completed on the server, regardless of success or failure.", append(labels, "grpc_code")),
		received: counter("grpc_server_msg_received_total", "Total number of RPC stream messages received on the server.", labels),
		sent:     counter("grpc_server_msg_sent_total", "Total number of gRPC stream messages sent by the server.", labels),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "grpc_server_handling_seconds",
			Help:    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets: prometheus.DefBuckets}, labels),
	}
}

// Describe and Collect make the set one prometheus.Collector.
func (g *GRPCMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range g.collectors() {
		c.Describe(ch)
	}
}

func (g *GRPCMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range g.collectors() {
		c.Collect(ch)
	}
}

func (g *GRPCMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.started, g.handled, g.received, g.sent, g.seconds}
}

// InitializeMetrics creates every series of every method s serves, at
// zero, for every code, so that they are exported before the first call.
func (g *GRPCMetrics) InitializeMetrics(s *grpc.Server) {
	for service, info := range s.GetServiceInfo() {
		for _, m := range info.Methods {
			g.series("/"+service+"/"+m.Name, methodType(m.IsClientStream, m.IsServerStream))
		}
	}
}

// series returns a method's series, creating them on its first call.
func (g *GRPCMetrics) series(fullMethod, typ string) *methodSeries {
	if s, ok := g.methods.Load(fullMethod); ok {
		return s.(*methodSeries)
	}
	service, method := "unknown", strings.TrimPrefix(fullMethod, "/")
	if i := strings.LastIndexByte(method, '/'); i >= 0 {
		service, method = method[:i], method[i+1:]
	}
	s := &methodSeries{labels: [3]string{typ, service, method}}
	s.started = g.started.WithLabelValues(s.labels[:]...)
	s.received = g.received.WithLabelValues(s.labels[:]...)
	s.sent = g.sent.WithLabelValues(s.labels[:]...)
	s.seconds = g.seconds.WithLabelValues(s.labels[:]...)
	for c := range s.handled {
		s.handled[c] = g.handled.WithLabelValues(typ, service, method, codes.Code(c).String())
	}
	actual, _ := g.methods.LoadOrStore(fullMethod, s)
	return actual.(*methodSeries)
}

func (s *methodSeries) finished(g *GRPCMetrics, err error, took time.Duration) {
	code := status.Code(err)
	if int(code) < len(s.handled) {
		s.handled[code].Inc()
	} else {
		g.handled.WithLabelValues(s.labels[0], s.labels[1], s.labels[2], code.String()).Inc()
	}
	s.seconds.Observe(took.Seconds())
}

func methodType(clientStream, serverStream bool) string {
	switch {
	case clientStream && serverStream:
		return "bidi_stream"
	case clientStream:
		return "client_stream"
	case serverStream:
		return "server_stream"
	}
	return "unary"
}

// UnaryServerInterceptor counts each call: started, its request received,
// its reply sent when it succeeds, handled by code, and its time.
func (g *GRPCMetrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		s := g.series(info.FullMethod, "unary")
		start := time.Now()
		s.started.Inc()
		s.received.Inc()
		resp, err := handler(ctx, req)
		if err == nil {
			s.sent.Inc()
		}
		s.finished(g, err, time.Since(start))
		return resp, err
	}
}

// StreamServerInterceptor counts each stream and the messages it carries.
func (g *GRPCMetrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		s := g.series(info.FullMethod, methodType(info.IsClientStream, info.IsServerStream))
		start := time.Now()
		s.started.Inc()
		err := handler(srv, &countedStream{ServerStream: ss, s: s})
		s.finished(g, err, time.Since(start))
		return err
	}
}

type countedStream struct {
	grpc.ServerStream
	s *methodSeries
}

func (c *countedStream) SendMsg(m any) error {
	err := c.ServerStream.SendMsg(m)
	if err == nil {
		c.s.sent.Inc()
	}
	return err
}

func (c *countedStream) RecvMsg(m any) error {
	err := c.ServerStream.RecvMsg(m)
	if err == nil {
		c.s.received.Inc()
	}
	return err
}

package tracing

import (
	"log/slog"
	"net/url"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc/codes"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/loglimit"
)

// defaultEndpoint is where the OTLP/gRPC exporter sends when the
// environment names no endpoint (the OpenTelemetry default).
const defaultEndpoint = "localhost:4317"

// Endpoint is where traces go, as the exporter reads the environment:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT,
// else localhost:4317. A user name or password in it is left out, so the
// value can be logged.
func Endpoint(getenv func(string) string) string {
	ep := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if ep == "" {
		ep = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if ep == "" {
		return defaultEndpoint
	}
	if u, err := url.Parse(ep); err == nil && u.User != nil {
		u.User = nil
		ep = u.String()
	}
	return clip.String(ep, clip.MaxLogged)
}

// Sampler names the sampler OTEL_TRACES_SAMPLER asks for, or the SDK's
// default.
func Sampler(getenv func(string) string) string {
	if s := getenv("OTEL_TRACES_SAMPLER"); s != "" {
		return clip.String(s, clip.MaxLogged)
	}
	return "parentbased_always_on"
}

// otelErrorLines rate-limits OpenTelemetry's errors: with the collector
// down every batch export fails, and one line a second (after 10 at once)
// says as much as all of them.
var otelErrorLines = loglimit.New(1, 10)

// maxLoggedError bounds the text of an OpenTelemetry error in a line.
const maxLoggedError = 512

// LogTo sends OpenTelemetry's own errors (a failed export, a dropped span)
// and its internal log to log, so that they come out in dedupd's format
// (--log-format json stays JSON) instead of as plain text on stderr. The
// errors are WARN lines "opentelemetry error", rate-limited; the internal
// log's verbose levels map below DEBUG and are normally off.
func LogTo(log *slog.Logger) {
	otel.SetLogger(logr.FromSlogHandler(log.Handler()))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		ok, dropped := otelErrorLines.Allow(loglimit.Key{What: "opentelemetry", Code: codes.Unknown})
		if !ok {
			return
		}
		log.Warn("opentelemetry error", "err", clip.String(err.Error(), maxLoggedError), "dropped", dropped)
	}))
}

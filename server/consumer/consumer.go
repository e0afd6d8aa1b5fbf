// Package consumer finds the consumer a call is for. Every DedupService
// request names it in a top-level string field called "consumer"; the
// interceptor here reads that field generically (through protoreflect) and
// puts it in the call's context, where authorization, rate limiting,
// logging and metrics find it without knowing each request type.
package consumer

import (
	"context"
	"regexp"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// fieldName is the request field that names the consumer.
const fieldName protoreflect.Name = "consumer"

// Of returns the consumer named by a request message, and whether the
// message has a string field "consumer" at all.
func Of(req any) (string, bool) {
	m, ok := req.(proto.Message)
	if !ok {
		return "", false
	}
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(fieldName)
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() || fd.IsMap() {
		return "", false
	}
	return r.Get(fd).String(), true
}

type ctxKey struct{}

// info is what the context carries: the consumer, and whether the request
// named one (a request without the field is not "for the empty consumer").
type info struct {
	name  string
	named bool
}

// NewContext returns ctx carrying the consumer of a request.
func NewContext(ctx context.Context, req any) context.Context {
	name, named := Of(req)
	return context.WithValue(ctx, ctxKey{}, info{name, named})
}

// FromContext returns the consumer NewContext stored, and whether the
// request had a consumer field.
func FromContext(ctx context.Context) (string, bool) {
	i, _ := ctx.Value(ctxKey{}).(info)
	return i.name, i.named
}

// UnaryServerInterceptor stores each request's consumer in its context. It
// goes first in the chain so every later interceptor can read it.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(NewContext(ctx, req), req)
	}
}

// Pattern is the form of a consumer name a request may carry.
var Pattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// Valid reports whether s is a consumer name a request may carry. Code that
// runs before validation uses it to keep names it will refuse out of
// anything it keeps.
func Valid(s string) bool { return Pattern.MatchString(s) }

// Problem says what is wrong with a name Valid refuses, without repeating
// it; "" for a valid name.
func Problem(s string) string {
	switch {
	case s == "":
		return "is required"
	case !Valid(s):
		return "must match " + Pattern.String()
	}
	return ""
}

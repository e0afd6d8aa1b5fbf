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

// named is what generated code gives a message with a string field
// "consumer" (and only such a message: a list, map or other kind of field of
// that name has a getter of another type).
type named interface{ GetConsumer() string }

// Of returns the consumer named by a request message, and whether the
// message has a string field "consumer" at all. Every call asks it, so a
// generated request is read through its getter; reflection, which costs
// a descriptor lookup and a boxed value per call, is left for messages
// without one (TestOfAgreesWithReflection holds the two to one answer).
func Of(req any) (string, bool) {
	if m, ok := req.(named); ok {
		if _, ok := req.(proto.Message); ok {
			return m.GetConsumer(), true
		}
	}
	return ofByReflection(req)
}

// ofByReflection is Of read from the message's descriptor.
func ofByReflection(req any) (string, bool) {
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
	return &infoContext{Context: ctx, info: info{name, named}}
}

// infoContext is context.WithValue(ctx, ctxKey{}, info) in one allocation
// instead of two (the context and the boxed info): every call makes one.
type infoContext struct {
	context.Context
	info info
}

func (c *infoContext) Value(key any) any {
	if key == (ctxKey{}) {
		return &c.info // a pointer into c: boxing the struct would allocate per lookup
	}
	return c.Context.Value(key)
}

// FromContext returns the consumer NewContext stored, and whether the
// request had a consumer field.
func FromContext(ctx context.Context) (string, bool) {
	if c, ok := ctx.(*infoContext); ok { // the usual case: no other value put in since
		return c.info.name, c.info.named
	}
	if i, ok := ctx.Value(ctxKey{}).(*info); ok {
		return i.name, i.named
	}
	return "", false
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

// Valid reports whether s is a consumer name a request may carry (it
// matches Pattern). Code that runs before validation uses it to keep names
// it will refuse out of anything it keeps. Auth, the rate limit and
// validation each ask it on every call, so it is Pattern written out by
// hand: the regular expression cost more than the rest of validation
// (TestValidIsPattern holds the two to one answer).
func Valid(s string) bool {
	if len(s) == 0 || len(s) > maxNameBytes || !nameByte(s[0], false) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !nameByte(s[i], true) {
			return false
		}
	}
	return true
}

// maxNameBytes is the longest name Pattern admits: 1 + 127 characters, all
// of them ASCII.
const maxNameBytes = 128

// nameByte reports whether c may appear in a name: [a-z0-9], and
// [._-] past the first character (rest).
func nameByte(c byte, rest bool) bool {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return true
	case c == '.', c == '_', c == '-':
		return rest
	}
	return false
}

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

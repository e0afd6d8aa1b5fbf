// Package httpapi serves the gRPC server's services over HTTP/1.1 and
// HTTP/2 in the Connect protocol (JSON or binary protobuf) and gRPC-Web,
// for callers without a gRPC stack: a shell script with curl, a browser,
// a serverless function.
//
// It is a transcoder (connectrpc.com/vanguard) in front of the grpc-go
// server itself, not a second implementation: every call reaches the same
// handlers through the same interceptors (auth, limits, metrics, access
// log), in the protobuf form they already decode, and its answer goes back
// the same way. What this package adds is only what HTTP needs:
//
//   - a unary call posted as plain JSON (or binary protobuf) without the
//     Connect-Protocol-Version header, which the Connect specification
//     makes optional, is read as the Connect call it is (DefaultConnect);
//   - the in-flight bound's arrival count, which grpc-go applies only on its
//     own listener, runs before a request body is read (Options.Tap);
//   - a JSON request with a member its message does not define is refused
//     INVALID_FIELD naming it (newJSONCodec);
//   - an empty JSON body is refused MALFORMED_REQUEST (the transcoder would
//     pass on no message, which grpc-go answers INTERNAL);
//   - a request or reply body over Options.MaxBodyBytes is refused as
//     soon as its length is known or read, before it is decoded, and a
//     body that does not decode is refused MALFORMED_REQUEST, as a gRPC
//     request is;
//   - a Connect unary request too large to take is answered 413, not 429
//     (toolarge.go).
package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Options are the bounds of the HTTP side.
type Options struct {
	// MaxBodyBytes bounds a request body and a reply body as the transport
	// sees them (JSON is larger than the protobuf message it holds). A
	// request body over it is refused RESOURCE_EXHAUSTED before it is
	// decoded, as soon as its Content-Length or its bytes read show it. The
	// message decoded from a body within it is still held to the gRPC
	// server's own message limit, as a gRPC call's is.
	MaxBodyBytes uint32
	// Tap, when set, is told of each call as it arrives, before its body is
	// read, and may refuse it (throttle.InFlight.Tap): grpc-go runs its
	// InTapHandle only for calls on its own listener.
	Tap tap.ServerInHandle
	// TooLarge is the message of the 413 that refuses a Connect unary
	// request too large to take (toolarge.go); it should name the setting
	// that bounds it.
	TooLarge string
}

// Handler serves every service registered on srv. Register them all
// before calling it: it routes the services srv has at that moment.
func Handler(srv *grpc.Server, opts Options) (http.Handler, error) {
	if opts.MaxBodyBytes == 0 {
		return nil, errors.New("httpapi: MaxBodyBytes must be positive")
	}
	var services []*vanguard.Service
	for name := range srv.GetServiceInfo() {
		services = append(services, vanguard.NewService(name, srv))
	}
	transcoder, err := vanguard.NewTranscoder(services,
		vanguard.WithCodec(newJSONCodec),
		vanguard.WithUnknownHandler(http.HandlerFunc(unknownRoute)),
		vanguard.WithDefaultServiceOptions(
			// The handlers speak gRPC with binary protobuf, whatever the
			// caller speaks: the gRPC server's codec, limits and reply
			// budget apply to every call.
			vanguard.WithTargetProtocols(vanguard.ProtocolGRPC),
			vanguard.WithTargetCodecs(vanguard.CodecProto),
			vanguard.WithMaxMessageBufferBytes(opts.MaxBodyBytes),
		))
	if err != nil {
		return nil, err
	}
	var h http.Handler = transcoder
	if opts.Tap != nil {
		h = tapped{next: h, tap: opts.Tap}
	}
	tooLarge := cmp.Or(opts.TooLarge, fmt.Sprintf("request too large: the body may hold at most %d bytes", opts.MaxBodyBytes))
	return DefaultConnect(tooLargeAs413(h, opts.MaxBodyBytes, tooLarge)), nil
}

// DefaultConnect marks as Connect a unary call that lacks the
// Connect-Protocol-Version header: a POST to /package.Service/Method with a
// body of application/json (optionally "; charset=utf-8") or
// application/proto, in any case, whose Content-Type it also writes the
// one way the transcoder reads it. The Connect specification makes the
// header optional; vanguard reads a request without it as REST, and
// answers 404 for a path that no google.api.http rule names. Marking it
// here, rather than giving every RPC a REST route on its own path, keeps
// one error format (Connect's) for every caller and needs nothing added
// for an RPC added later.
func DefaultConnect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && rpcPath(r.URL.Path) {
			media := unaryConnectBody(r.Header.Values("Content-Type"))
			if media != "" && len(r.Header.Values("Connect-Protocol-Version")) == 0 {
				r.Header.Set("Content-Type", media)
				r.Header.Set("Connect-Protocol-Version", "1")
			}
			if media == "application/json" && r.ContentLength == 0 {
				// The transcoder would pass on no message at all, which
				// grpc-go answers INTERNAL.
				_ = errorWriter.Write(w, r, errEmptyJSON)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// errEmptyJSON refuses an empty JSON body, as Connect servers do: JSON's
// empty message is {}.
var errEmptyJSON = connectError(rpcerrors.Status(
	fmt.Errorf("%w: an empty body is not a JSON object; send {} for an empty message", rpcerrors.ErrMalformedRequest), "", ""))

// errorWriter writes an error in the protocol of the request it answers:
// Connect unary or streaming, or gRPC-Web.
var errorWriter = connect.NewErrorWriter()

// unaryConnectBody is the media type of a Connect unary body,
// application/json or application/proto, when the one Content-Type is one
// (compared as media types: case-insensitive, JSON with no parameter but
// charset=utf-8), and "" otherwise.
func unaryConnectBody(values []string) string {
	if len(values) != 1 {
		return ""
	}
	media, params, err := mime.ParseMediaType(values[0])
	if err != nil {
		return ""
	}
	switch charset, ok := params["charset"]; {
	case media == "application/proto" && len(params) == 0:
		return media
	case media == "application/json" && (len(params) == 0 || len(params) == 1 && ok && strings.EqualFold(charset, "utf-8")):
		return media
	}
	return ""
}

// rpcPath reports whether path has the form of a gRPC method,
// /package.Service/Method, which is all a Connect unary call can name.
func rpcPath(path string) bool {
	service, method, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return ok && strings.Contains(service, ".") && method != "" && !strings.Contains(method, "/")
}

// unknownRoute answers a request that names no method, or not as a method
// is called, with a Connect error that says how one is: curl without
// -H 'Content-Type: application/json' is the usual cause.
func unknownRoute(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"code":"not_found","message":"no such method: call one with POST /dedup.v1.<Service>/<Method>, `+
		`Content-Type: application/json (or application/proto) and the request message as the body (docs/http.md)"}`+"\n")
}

// newJSONCodec is vanguard's JSON codec (protojson; every field is
// written, so that a caller without generated code sees zero values rather
// than missing ones), except that:
//   - a request with a member its message does not define is refused
//     INVALID_ARGUMENT, reason INVALID_FIELD, naming the member: protojson
//     as vanguard sets it up ignores it, so a misspelled "digset" would
//     store a record without a digest and "lease_tll" would give the
//     default lease, without a word to the caller (protobuf binary keeps
//     proto3's rules: generated code cannot misspell a field);
//   - a request that does not decode is refused as one in protobuf is:
//     INVALID_ARGUMENT, reason MALFORMED_REQUEST, its message cut as every
//     other (protojson quotes the offending text, which a caller chose).
func newJSONCodec(res vanguard.TypeResolver) vanguard.Codec {
	codec := vanguard.NewJSONCodec(res)
	strict := *codec
	strict.UnmarshalOptions.DiscardUnknown = false
	return strictJSON{JSONCodec: &strict, lenient: codec}
}

type strictJSON struct {
	*vanguard.JSONCodec
	lenient *vanguard.JSONCodec
}

func (c strictJSON) Unmarshal(data []byte, msg proto.Message) error {
	err := c.JSONCodec.Unmarshal(data, msg)
	if err == nil {
		return nil
	}
	// Decoding leniently tells an unknown member (which only the strict
	// decoder refuses) from malformed JSON (which both refuse).
	proto.Reset(msg)
	if c.lenient.Unmarshal(data, msg) == nil {
		proto.Reset(msg)
		desc := msg.ProtoReflect().Descriptor()
		field := unknownField(data, desc)
		if field == "" {
			field = "(unknown)"
		}
		return connectError(rpcerrors.Status(&rpcerrors.FieldError{
			Field: clip.String(field, clip.MaxEchoed), Problem: unknownFieldProblem(desc)}, "", ""))
	}
	//nolint:errorlint // the sentinel alone decides the status; the decoder's error is text
	return connectError(rpcerrors.Status(fmt.Errorf("%w: %v", rpcerrors.ErrMalformedRequest, err), "", ""))
}

// connectError is st as a Connect error, details and all.
func connectError(st *status.Status) *connect.Error {
	err := connect.NewError(connect.Code(st.Code()), errors.New(st.Message()))
	for _, d := range st.Proto().GetDetails() {
		if msg, uerr := d.UnmarshalNew(); uerr == nil {
			if detail, derr := connect.NewErrorDetail(msg); derr == nil {
				err.AddDetail(detail)
			}
		}
	}
	return err
}

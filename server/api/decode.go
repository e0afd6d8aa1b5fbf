package api

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Register registers the service on s with request decoding that answers a
// string field holding invalid UTF-8 with INVALID_ARGUMENT naming the
// field. Left to itself, grpc-go refuses such a request while decoding it,
// before any interceptor runs, with a bare INTERNAL: an answer the API
// reserves for bugs, given here for a mistake of the caller's. A request
// that decodes is decoded once; the wire-format check runs only when it
// does not.
func Register(s grpc.ServiceRegistrar, svc dedupv1.DedupServiceServer) {
	registerLeniently(s, dedupv1.DedupService_ServiceDesc, svc)
}

// RegisterAdmin registers the admin service on s the same way.
func RegisterAdmin(s grpc.ServiceRegistrar, svc dedupv1.AdminServiceServer) {
	registerLeniently(s, dedupv1.AdminService_ServiceDesc, svc)
}

func registerLeniently(s grpc.ServiceRegistrar, desc grpc.ServiceDesc, svc any) {
	desc.Methods = slices.Clone(desc.Methods)
	for i := range desc.Methods {
		desc.Methods[i].Handler = decodeLeniently(desc.Methods[i].Handler)
	}
	desc.Streams = slices.Clone(desc.Streams)
	for i := range desc.Streams {
		generated := desc.Streams[i].Handler
		desc.Streams[i].Handler = func(srv any, stream grpc.ServerStream) error {
			return generated(srv, lenientStream{stream})
		}
	}
	s.RegisterService(&desc, svc)
}

// lenientStream decodes each message a stream receives as decodeLeniently
// decodes a unary request.
type lenientStream struct{ grpc.ServerStream }

func (s lenientStream) RecvMsg(m any) error {
	target := &decodeTarget{msg: m.(proto.Message)}
	if err := s.ServerStream.RecvMsg(target); err != nil {
		return err
	}
	return target.err
}

// decodeLeniently wraps a generated handler so that the request is decoded
// once, by lenientCodec, into the generated request message; a request that
// does not decode gets decodeError's answer instead of grpc-go's INTERNAL.
func decodeLeniently(generated grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		return generated(srv, ctx, func(req any) error {
			target := &decodeTarget{msg: req.(proto.Message)}
			if err := dec(target); err != nil {
				return err
			}
			return target.err
		}, ic)
	}
}

// decodeTarget is what decodeLeniently asks grpc-go to decode into: the
// request message, and the error to answer when its bytes do not decode.
type decodeTarget struct {
	msg proto.Message
	err error
}

// lenientCodec is grpc-go's proto codec, except that it decodes into a
// decodeTarget without failing: grpc-go would turn a codec's error into a
// bare INTERNAL. It replaces the codec registered as "proto" for the whole
// process (grpc-go's documented way to change it), and behaves exactly as
// grpc-go's own for every other value, so clients and other services in the
// process see no difference.
type lenientCodec struct{ encoding.CodecV2 }

func init() {
	encoding.RegisterCodecV2(lenientCodec{encoding.GetCodecV2(protocodec.Name)})
}

func (c lenientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	target, ok := v.(*decodeTarget)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	// proto.Unmarshal copies what it keeps, so buf can go back to the pool.
	target.err = decodeRequest(buf.ReadOnlyData(), target.msg)
	return nil
}

// decodeRequest decodes wire into req, or says why it cannot: the string
// field that is not UTF-8 (INVALID_FIELD), or MALFORMED_REQUEST.
func decodeRequest(wire []byte, req proto.Message) error {
	err := proto.Unmarshal(wire, req)
	if err == nil {
		return nil
	}
	if field := invalidUTF8Field(wire, req.ProtoReflect().Descriptor()); field != "" {
		return rpcerrors.Status(&rpcerrors.FieldError{Field: field, Problem: "is not valid UTF-8"}, "", "").Err()
	}
	//nolint:errorlint // the sentinel alone decides the status; the decoder's error is text
	return rpcerrors.Status(fmt.Errorf("%w: %v", rpcerrors.ErrMalformedRequest, err), "", "").Err()
}

// invalidUTF8Field names the first top-level string field of the wire bytes
// that is not UTF-8; our requests have strings only at the top level.
func invalidUTF8Field(wire []byte, md protoreflect.MessageDescriptor) string {
	for len(wire) > 0 {
		num, typ, n := protowire.ConsumeTag(wire)
		if n < 0 {
			return ""
		}
		wire = wire[n:]
		if typ == protowire.BytesType {
			value, m := protowire.ConsumeBytes(wire)
			if m < 0 {
				return ""
			}
			if fd := md.Fields().ByNumber(num); fd != nil && fd.Kind() == protoreflect.StringKind && !utf8.Valid(value) {
				return string(fd.Name())
			}
			wire = wire[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, wire)
		if m < 0 {
			return ""
		}
		wire = wire[m:]
	}
	return ""
}

package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	"github.com/dedupd/dedupd/server/rpcmethod"
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
		desc.Methods[i].Handler = decodeLeniently(desc.Methods[i].Handler, batchItems(desc.ServiceName, desc.Methods[i].MethodName))
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
// The batch items whose strings are not UTF-8 reach the handler through
// the context (itemFaultsOf).
//
// Only a batch request (items names its repeated field of items) has
// items whose faults its handler reads; every other call is spared the
// faults and the context carrying them.
func decodeLeniently(generated grpc.MethodHandler, items protoreflect.Name) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		var faults *itemFaults
		if items != "" {
			faults = &itemFaults{items: string(items)}
			ctx = context.WithValue(ctx, itemFaultsKey{}, faults)
		}
		return generated(srv, ctx, func(req any) error {
			target := &decodeTarget{msg: req.(proto.Message), faults: faults}
			if err := dec(target); err != nil {
				return err
			}
			return target.err
		}, ic)
	}
}

// batchItems names the repeated field of a method's request that holds a
// batch's items, as the method table (server/rpcmethod) says; "" for a
// method whose request is not a batch.
func batchItems(service, method string) protoreflect.Name {
	m, ok := rpcmethod.Of("/" + service + "/" + method)
	if !ok || !m.Batch() {
		return ""
	}
	return m.Items.Name()
}

// decodeTarget is what decodeLeniently asks grpc-go to decode into: the
// request message, and the error to answer when its bytes do not decode.
type decodeTarget struct {
	msg    proto.Message
	faults *itemFaults // nil: every fault fails the whole call
	err    error
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
	target.err = decodeItems(buf.ReadOnlyData(), target.msg, target.faults)
	return nil
}

// decodeRequest decodes wire into req, or says why it cannot: the first
// string field, nested or not, that is not UTF-8 (INVALID_FIELD naming
// its path, such as "policy.consumer"), or MALFORMED_REQUEST.
func decodeRequest(wire []byte, req proto.Message) error {
	return decodeItems(wire, req, nil)
}

// decodeItems decodes wire into req as decodeRequest does, except that in
// a batch request with faults to record them (faults names its items), a
// string that is not UTF-8 inside an item fails only that item:
// the request decodes with the string made valid (each bad byte becomes
// U+FFFD), and faults names the item's field for the handler to refuse.
func decodeItems(wire []byte, req proto.Message, faults *itemFaults) error {
	err := proto.Unmarshal(wire, req)
	if err == nil {
		return nil
	}
	md := req.ProtoReflect().Descriptor()
	var bad []string
	fixed, ok := validUTF8(wire, md, "", &bad)
	if !ok || len(bad) == 0 || proto.Unmarshal(fixed, req) != nil {
		//nolint:errorlint // the sentinel alone decides the status; the decoder's error is text
		return rpcerrors.Status(fmt.Errorf("%w: %v", rpcerrors.ErrMalformedRequest, err), "", "").Err()
	}
	indexes := make([]int, len(bad))
	for n, field := range bad {
		i, inItem := faults.itemIndex(field)
		if faults == nil || !inItem {
			return rpcerrors.Status(&rpcerrors.FieldError{Field: field, Problem: notUTF8}, "", "").Err()
		}
		indexes[n] = i
	}
	for n, field := range bad {
		faults.add(indexes[n], field)
	}
	return nil
}

const notUTF8 = "is not valid UTF-8"

// validUTF8 copies the wire bytes of a message of type md with every string
// field, at any depth, made valid UTF-8, and appends to bad the path of
// each that was not ("items[3].rejection.reason"). ok is false when the
// bytes do not parse as fields; proto.Unmarshal then says why.
func validUTF8(wire []byte, md protoreflect.MessageDescriptor, prefix string, bad *[]string) (out []byte, ok bool) {
	out = make([]byte, 0, len(wire))
	occurrences := map[protowire.Number]int{}
	for len(wire) > 0 {
		num, typ, n := protowire.ConsumeTag(wire)
		if n < 0 {
			return nil, false
		}
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil || fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.MessageKind {
			m := protowire.ConsumeFieldValue(num, typ, wire[n:])
			if m < 0 {
				return nil, false
			}
			out, wire = append(out, wire[:n+m]...), wire[n+m:]
			continue
		}
		value, m := protowire.ConsumeBytes(wire[n:])
		if m < 0 {
			return nil, false
		}
		wire = wire[n+m:]
		path := prefix + string(fd.Name())
		if fd.IsList() {
			path = fmt.Sprintf("%s[%d]", path, occurrences[num])
			occurrences[num]++
		}
		out = protowire.AppendTag(out, num, typ)
		if fd.Kind() == protoreflect.StringKind {
			if !utf8.Valid(value) {
				*bad = append(*bad, path)
				value = []byte(strings.ToValidUTF8(string(value), string(utf8.RuneError)))
			}
			out = protowire.AppendBytes(out, value)
			continue
		}
		inner, ok := validUTF8(value, fd.Message(), path+".", bad)
		if !ok {
			return nil, false
		}
		out = protowire.AppendBytes(out, inner)
	}
	return out, true
}

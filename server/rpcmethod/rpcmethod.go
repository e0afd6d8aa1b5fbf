// Package rpcmethod is dedupd's one table of RPCs: for every method of the
// dedup.v1 services, the facts the server acts on, read from what the
// protos declare about it (idempotency_level NO_SIDE_EFFECTS for a method
// that only reads, the dedup.v1.rpc_facts option for the rest). The reply
// budget, authorization, rate limiting, request decoding and the metrics
// ask this table, never a method's name: a method named GetAndClaim that
// writes is a write, whatever its name says.
package rpcmethod

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Package is the proto package whose services the table holds.
const Package protoreflect.FullName = "dedup.v1"

// Method is what the table knows of one RPC.
type Method struct {
	// FullName is the method as gRPC names a call to it:
	// "/dedup.v1.DedupService/Claim".
	FullName string
	// Op is the operation's name, the method's own ("Claim"): the value of
	// the method label of dedupd's metrics, wherever one names an RPC.
	Op string
	// Service is the short name of its service ("DedupService").
	Service string
	// ReadOnly: the method changes nothing stored (NO_SIDE_EFFECTS).
	ReadOnly bool
	// Admin: an operator's call, which needs an admin credential; any
	// other method is a consumer's, scoped to the request's consumer.
	Admin bool
	// Items is the request's repeated field holding a batch's items; nil
	// when the request is not a batch.
	Items protoreflect.FieldDescriptor
	// Fenced: the request acts under a lease it holds, and can fail with
	// LEASE_LOST.
	Fenced bool
	// Desc is the method's descriptor.
	Desc protoreflect.MethodDescriptor
}

// Batch reports whether the method's request is a batch of items.
func (m *Method) Batch() bool { return m.Items != nil }

// ItemCount is the number of items of req, a request of a batch method.
func (m *Method) ItemCount(req proto.Message) int {
	if m.Items == nil || req == nil {
		return 0
	}
	msg := req.ProtoReflect()
	if msg.Descriptor() != m.Items.ContainingMessage() {
		return 0
	}
	return msg.Get(m.Items).List().Len()
}

// table is built once, at init, from the registered descriptors; it never
// changes after.
var table = mustBuild(protoregistry.GlobalFiles)

// byName indexes table by FullName.
var byName = index(table)

// Of returns the method a call to fullMethod ("/pkg.Service/Method") is
// for; false for a method outside the table (health checks, reflection).
func Of(fullMethod string) (*Method, bool) {
	m, ok := byName[fullMethod]
	return m, ok
}

// All returns every method of the table, service by service, in the
// order the protos declare them. The slice is the caller's.
func All() []*Method { return append([]*Method(nil), table...) }

// Op is the operation name of a call to fullMethod: the table's Op, and
// for a method outside the table the last element of its name.
func Op(fullMethod string) string {
	if m, ok := byName[fullMethod]; ok {
		return m.Op
	}
	return fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
}

func mustBuild(files *protoregistry.Files) []*Method {
	// The generated package registers dedup.v1's files when it is linked;
	// naming one of them here makes sure it is.
	_ = dedupv1.File_dedup_v1_options_proto
	methods, err := Build(files)
	if err != nil {
		panic(err)
	}
	return methods
}

func index(methods []*Method) map[string]*Method {
	byName := make(map[string]*Method, len(methods))
	for _, m := range methods {
		byName[m.FullName] = m
	}
	return byName
}

// Build reads the table of every service of Package in files. A method
// with no access decided, or whose batch_items names no repeated field of
// its request, is an error: the server must not guess at either.
func Build(files *protoregistry.Files) ([]*Method, error) {
	var methods []*Method
	var errs []string
	files.RangeFilesByPackage(Package, func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			sd := f.Services().Get(i)
			for j := range sd.Methods().Len() {
				m, err := methodOf(sd.Methods().Get(j))
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				methods = append(methods, m)
			}
		}
		return true
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("rpcmethod: %s", strings.Join(errs, "; "))
	}
	return methods, nil
}

// methodOf reads one method's facts from its options.
func methodOf(md protoreflect.MethodDescriptor) (*Method, error) {
	opts, _ := md.Options().(*descriptorpb.MethodOptions)
	facts, _ := proto.GetExtension(opts, dedupv1.E_RpcFacts).(*dedupv1.RpcFacts)
	m := &Method{
		FullName: "/" + string(md.Parent().FullName()) + "/" + string(md.Name()),
		Op:       string(md.Name()),
		Service:  string(md.Parent().Name()),
		ReadOnly: opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS,
		Fenced:   facts.GetFenced(),
		Desc:     md,
	}
	switch facts.GetAccess() {
	case dedupv1.Access_ACCESS_CONSUMER:
	case dedupv1.Access_ACCESS_ADMIN:
		m.Admin = true
	default:
		return nil, fmt.Errorf("%s declares no access (option (dedup.v1.rpc_facts).access)", md.FullName())
	}
	if name := facts.GetBatchItems(); name != "" {
		fd := md.Input().Fields().ByName(protoreflect.Name(name))
		if fd == nil || !fd.IsList() {
			return nil, fmt.Errorf("%s: batch_items %q is not a repeated field of %s", md.FullName(), name, md.Input().FullName())
		}
		m.Items = fd
	}
	return m, nil
}

package rpcmethod

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// synthetic is a registry holding one dedup.v1 file with service Probe,
// whose methods have the options given (nil: none at all).
func synthetic(t *testing.T, methods map[string]*descriptorpb.MethodOptions) *protoregistry.Files {
	t.Helper()
	svc := &descriptorpb.ServiceDescriptorProto{Name: new("Probe")}
	for name, opts := range methods {
		svc.Method = append(svc.Method, &descriptorpb.MethodDescriptorProto{
			Name: new(name), InputType: new(".dedup.v1.ProbeRequest"),
			OutputType: new(".dedup.v1.ProbeRequest"), Options: opts,
		})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: new("dedup/v1/probe.proto"), Package: new("dedup.v1"), Syntax: new("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: new("ProbeRequest"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: new("keys"), Number: new(int32(1)), JsonName: new("keys"),
					Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()},
				{Name: new("one"), Number: new(int32(2)), JsonName: new("one"),
					Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()},
			},
		}},
		Service: []*descriptorpb.ServiceDescriptorProto{svc},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := &protoregistry.Files{}
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	return files
}

func options(read bool, facts *dedupv1.RpcFacts) *descriptorpb.MethodOptions {
	opts := &descriptorpb.MethodOptions{}
	if read {
		opts.IdempotencyLevel = descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()
	}
	if facts != nil {
		proto.SetExtension(opts, dedupv1.E_RpcFacts, facts)
	}
	return opts
}

// TestBuildRefusesUndecidedMethods: a method with no access, or whose
// batch_items is not a repeated field of its request, stops the table
// from building, naming the method.
func TestBuildRefusesUndecidedMethods(t *testing.T) {
	for name, tc := range map[string]struct {
		opts *descriptorpb.MethodOptions
		says string
	}{
		"NoOptions":      {nil, "declares no access"},
		"ReadNoFacts":    {options(true, nil), "declares no access"},
		"AccessUnset":    {options(false, &dedupv1.RpcFacts{BatchItems: "keys"}), "declares no access"},
		"ItemsMissing":   {options(false, &dedupv1.RpcFacts{Access: dedupv1.Access_ACCESS_CONSUMER, BatchItems: "nope"}), `batch_items "nope"`},
		"ItemsNotListed": {options(false, &dedupv1.RpcFacts{Access: dedupv1.Access_ACCESS_CONSUMER, BatchItems: "one"}), `batch_items "one"`},
	} {
		methods, err := Build(synthetic(t, map[string]*descriptorpb.MethodOptions{name: tc.opts}))
		if err == nil || !strings.Contains(err.Error(), "dedup.v1.Probe."+name) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Build = %d methods, %v; want an error naming it and saying %q", name, len(methods), err, tc.says)
		}
	}
}

// TestBuildReadsTheOptionsNotTheName: facts come from the options alone;
// a method named like a read that declares no NO_SIDE_EFFECTS is a write,
// and one named like a write that declares it is a read.
func TestBuildReadsTheOptionsNotTheName(t *testing.T) {
	consumer := &dedupv1.RpcFacts{Access: dedupv1.Access_ACCESS_CONSUMER}
	methods, err := Build(synthetic(t, map[string]*descriptorpb.MethodOptions{
		"GetAndClaim":  options(false, consumer),
		"ClaimNothing": options(true, consumer),
		"ListBatch":    options(false, &dedupv1.RpcFacts{Access: dedupv1.Access_ACCESS_ADMIN, BatchItems: "keys", Fenced: true}),
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fact{}
	for _, m := range methods {
		f := fact{read: m.ReadOnly, admin: m.Admin, fenced: m.Fenced}
		if m.Items != nil {
			f.items = string(m.Items.Name())
		}
		got[m.FullName] = f
	}
	for name, w := range map[string]fact{
		"/dedup.v1.Probe/GetAndClaim":  write,
		"/dedup.v1.Probe/ClaimNothing": read,
		"/dedup.v1.Probe/ListBatch":    {admin: true, fenced: true, items: "keys"},
	} {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
}

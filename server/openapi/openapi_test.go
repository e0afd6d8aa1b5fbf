package openapi

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/dedupd/dedupd/proto/dedup/v1" // registers the dedup.v1 descriptors
)

// described is the part of the document the tests read.
type described struct {
	OpenAPI string `yaml:"openapi"`
	Paths   map[string]struct {
		Post *struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Ref string `yaml:"$ref"`
					} `yaml:"schema"`
				} `yaml:"content"`
			} `yaml:"requestBody"`
			Responses map[string]any `yaml:"responses"`
		} `yaml:"post"`
	} `yaml:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]any `yaml:"properties"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

// TestEveryRPCIsDescribed enumerates the services from the compiled
// descriptors, not from the document: an RPC the generator skipped, or a
// document left stale after a proto change, fails here.
func TestEveryRPCIsDescribed(t *testing.T) {
	var doc described
	if err := yaml.Unmarshal(Document(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	services, methods := 0, 0
	protoregistry.GlobalFiles.RangeFilesByPackage("dedup.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			services++
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				methods++
				checkMethod(t, doc, m)
			}
		}
		return true
	})
	if services != 4 {
		t.Errorf("%d services in dedup.v1, want the four (Dedup, Admin, Stream, StreamAdmin)", services)
	}
	if len(doc.Paths) != methods {
		t.Errorf("the document has %d paths for %d RPCs", len(doc.Paths), methods)
	}
}

func checkMethod(t *testing.T, doc described, m protoreflect.MethodDescriptor) {
	t.Helper()
	path := "/" + string(m.Parent().FullName()) + "/" + string(m.Name())
	op := doc.Paths[path].Post
	if op == nil {
		t.Errorf("no POST %s", path)
		return
	}
	contentType := "application/json"
	if m.IsStreamingServer() {
		contentType = "application/connect+json"
	}
	want := "#/components/schemas/" + string(m.Input().FullName())
	if got := op.RequestBody.Content[contentType].Schema.Ref; got != want {
		t.Errorf("%s: request body %s is %q, want %q", path, contentType, got, want)
	}
	if op.Responses["200"] == nil || op.Responses["4XX"] == nil {
		t.Errorf("%s: responses %v lack 200 or 4XX", path, op.Responses)
	}
	// The JSON names are protojson's: every field of the input, camelCase.
	schema := doc.Components.Schemas[string(m.Input().FullName())]
	fields := m.Input().Fields()
	for i := range fields.Len() {
		if name := fields.Get(i).JSONName(); schema.Properties[name] == nil {
			t.Errorf("%s: schema of %s has no property %q", path, m.Input().FullName(), name)
		}
	}
}

// TestDocumentIsTheCommittedFile: what the binary serves is the file in
// the repository (which CI regenerates and diffs).
func TestDocumentIsTheCommittedFile(t *testing.T) {
	onDisk, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != string(Document()) {
		t.Fatal("the embedded description differs from openapi.yaml")
	}
}

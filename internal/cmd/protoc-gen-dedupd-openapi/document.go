package main

import (
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/compiler/protogen"
)

// node is an ordered YAML mapping: OpenAPI readers do not care about key
// order, but a diff of the committed file does.
type node = *yaml.Node

func mapping(kv ...any) node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		set(n, kv[i].(string), kv[i+1])
	}
	return n
}

func set(m node, key string, value any) {
	m.Content = append(m.Content, scalar(key), toNode(value))
}

func toNode(v any) node {
	switch v := v.(type) {
	case node:
		return v
	case string:
		return scalar(v)
	case bool:
		if v {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range v {
			n.Content = append(n.Content, scalar(s))
		}
		return n
	case []node:
		return &yaml.Node{Kind: yaml.SequenceNode, Content: v}
	}
	panic("openapi: no YAML form for a value")
}

func scalar(s string) node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

// newDocument describes every service of the files to generate.
func newDocument(gen *protogen.Plugin) node {
	schemas := newSchemaSet()
	paths := mapping()
	tags := []node{}
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		for _, s := range f.Services {
			tags = append(tags, mapping("name", string(s.Desc.FullName()), "description", comment(s.Comments)))
			for _, m := range s.Methods {
				set(paths, "/"+string(s.Desc.FullName())+"/"+string(m.Desc.Name()), mapping("post", operation(s, m, schemas)))
			}
		}
	}
	schemas.add(connectErrorName, connectError())
	return mapping(
		"openapi", "3.1.0",
		"info", mapping(
			"title", "dedupd HTTP/JSON API",
			"version", "v1",
			"summary", "Connect over HTTP: POST /<service>/<method> with a JSON body.",
			"description", apiDescription,
			"license", mapping("name", "Apache-2.0", "identifier", "Apache-2.0"),
		),
		"servers", []node{mapping("url", "http://127.0.0.1:8080", "description", "dedupd serve --http-listen 127.0.0.1:8080")},
		"security", []node{mapping("bearer", []string{})},
		"tags", tags,
		"paths", paths,
		"components", mapping(
			"securitySchemes", mapping("bearer", mapping("type", "http", "scheme", "bearer",
				"description", "A token of --auth-tokens (docs/operations.md); not needed when the server runs without auth.")),
			"responses", mapping(errorResponseName, mapping(
				"description", "A Connect error; its code maps to the HTTP status (docs/http.md).",
				"content", mapping("application/json", mapping("schema", ref(connectErrorName))))),
			"schemas", schemas.sorted(),
		),
	)
}

const apiDescription = `Every RPC of dedupd's gRPC services, served by ` + "`dedupd serve --http-listen`" + ` as a
Connect call: POST /<package>.<Service>/<Method> with Content-Type application/json
(docs/http.md). Bodies are protobuf's canonical JSON: lowerCamelCase field names,
64-bit integers as strings, bytes as base64, durations as strings such as "30s",
timestamps in RFC 3339, enums by name; unknown fields are refused. A failed call
answers a non-2xx status with Connect's error body, whose details carry the
google.rpc.ErrorInfo reason that docs/api.md lists.
Generated from proto/dedup/v1 by internal/cmd/protoc-gen-dedupd-openapi.`

func operation(s *protogen.Service, m *protogen.Method, schemas *schemaSet) node {
	in, out := schemas.message(m.Input), schemas.message(m.Output)
	op := mapping(
		"operationId", string(s.Desc.Name())+"_"+string(m.Desc.Name()),
		"tags", []string{string(s.Desc.FullName())},
		"summary", firstSentence(comment(m.Comments)),
		"description", comment(m.Comments),
	)
	if m.Desc.IsStreamingServer() {
		// A server stream is Connect's enveloped stream: each message, and a
		// final end-of-stream frame, behind a 5-byte prefix (docs/http.md).
		set(op, "requestBody", mapping("required", true,
			"description", "One enveloped message: a flags byte (0), a 4-byte big-endian length, then the JSON.",
			"content", mapping("application/connect+json", mapping("schema", in))))
		set(op, "responses", mapping(
			"200", mapping("description", "A stream of enveloped messages, each of this schema, then an end-of-stream frame that carries any error.",
				"content", mapping("application/connect+json", mapping("schema", out))),
			"4XX", errorResponse(),
			"5XX", errorResponse(),
		))
		return op
	}
	set(op, "requestBody", mapping("required", true, "content", mapping("application/json", mapping("schema", in))))
	set(op, "responses", mapping(
		"200", mapping("description", "The reply.", "content", mapping("application/json", mapping("schema", out))),
		"4XX", errorResponse(),
		"5XX", errorResponse(),
	))
	return op
}

// errorResponse refers to the one error response every operation shares.
func errorResponse() node {
	return mapping("$ref", "#/components/responses/"+errorResponseName)
}

const errorResponseName = "ConnectError"

const connectErrorName = "connect.Error"

// connectError is the JSON of a failed Connect unary call.
func connectError() node {
	return mapping(
		"type", "object",
		"description", "Connect's error body. details holds google.rpc.ErrorInfo (domain dedup.v1, a stable reason) and, for errors about an existing record, the dedup.v1.Record.",
		"required", []string{"code"},
		"properties", mapping(
			"code", mapping("type", "string", "enum", []string{
				"canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
				"already_exists", "permission_denied", "resource_exhausted", "failed_precondition",
				"aborted", "out_of_range", "unimplemented", "internal", "unavailable",
				"data_loss", "unauthenticated",
			}),
			"message", mapping("type", "string"),
			"details", mapping("type", "array", "items", mapping(
				"type", "object",
				"properties", mapping(
					"type", mapping("type", "string", "description", "Fully qualified name of the detail's message, e.g. google.rpc.ErrorInfo."),
					"value", mapping("type", "string", "contentEncoding", "base64", "description", "The detail's protobuf bytes."),
					"debug", mapping("description", "The detail as JSON, when the server adds it."),
				),
			)),
		),
	)
}

// comment is a declaration's leading comment as plain text.
func comment(c protogen.CommentSet) string {
	lines := strings.Split(strings.TrimSpace(string(c.Leading)), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func ref(name string) node { return mapping("$ref", "#/components/schemas/"+name) }

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

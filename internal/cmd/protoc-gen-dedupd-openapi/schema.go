package main

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// schemaSet collects the schema of each message and enum reached from a
// method, once each, named by full protobuf name.
type schemaSet struct{ byName map[string]node }

func newSchemaSet() *schemaSet { return &schemaSet{byName: map[string]node{}} }

func (s *schemaSet) add(name string, n node) { s.byName[name] = n }

func (s *schemaSet) sorted() node {
	m := mapping()
	for _, k := range sortedKeys(s.byName) {
		set(m, k, s.byName[k])
	}
	return m
}

// wellKnown are the messages protojson writes as something other than an
// object.
var wellKnown = map[protoreflect.FullName]func() node{
	"google.protobuf.Duration": func() node {
		return mapping("type", "string", "pattern", `^-?[0-9]+(\.[0-9]{1,9})?s$`,
			"description", "A duration in seconds with an s suffix, e.g. \"30s\" or \"0.250s\".")
	},
	"google.protobuf.Timestamp": func() node {
		return mapping("type", "string", "format", "date-time", "description", "RFC 3339, UTC, e.g. \"2026-12-07T10:00:00Z\".")
	},
	"google.protobuf.Any": func() node {
		return mapping("type", "object", "required", []string{"@type"},
			"properties", mapping("@type", mapping("type", "string")), "additionalProperties", true)
	},
}

// message returns a reference to m's schema, adding it (and every message
// and enum it reaches) on first use.
func (s *schemaSet) message(m *protogen.Message) node {
	name := string(m.Desc.FullName())
	if _, ok := s.byName[name]; ok {
		return ref(name)
	}
	if wk, ok := wellKnown[m.Desc.FullName()]; ok {
		s.add(name, wk())
		return ref(name)
	}
	obj := mapping("type", "object")
	s.add(name, obj) // before the fields: a message may refer to itself
	if d := comment(m.Comments); d != "" {
		set(obj, "description", d)
	}
	props := mapping()
	for _, f := range m.Fields {
		set(props, f.Desc.JSONName(), s.field(f))
	}
	set(obj, "properties", props)
	set(obj, "additionalProperties", false)
	return ref(name)
}

func (s *schemaSet) field(f *protogen.Field) node {
	var n node
	switch {
	case f.Desc.IsMap():
		n = mapping("type", "object", "additionalProperties", s.single(f.Message.Fields[1]))
	case f.Desc.IsList():
		n = mapping("type", "array", "items", s.single(f))
	default:
		n = s.single(f)
	}
	if d := comment(f.Comments); d != "" {
		// OpenAPI 3.1 allows a description beside a $ref.
		set(n, "description", d)
	}
	return n
}

// single is the schema of one value of f (an element, for a list).
func (s *schemaSet) single(f *protogen.Field) node {
	switch f.Desc.Kind() {
	case protoreflect.BoolKind:
		return mapping("type", "boolean")
	case protoreflect.StringKind:
		return mapping("type", "string")
	case protoreflect.BytesKind:
		return mapping("type", "string", "contentEncoding", "base64")
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return mapping("type", "integer", "format", "int32")
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return mapping("type", "integer", "format", "uint32", "minimum", 0)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return mapping("type", "string", "format", "int64", "pattern", `^-?[0-9]+$`)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return mapping("type", "string", "format", "uint64", "pattern", `^[0-9]+$`)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return mapping("type", "number")
	case protoreflect.EnumKind:
		return s.enum(f.Enum)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return s.message(f.Message)
	}
	panic("openapi: field kind " + f.Desc.Kind().String())
}

func (s *schemaSet) enum(e *protogen.Enum) node {
	name := string(e.Desc.FullName())
	if _, ok := s.byName[name]; !ok {
		names := make([]string, 0, len(e.Values))
		for _, v := range e.Values {
			names = append(names, string(v.Desc.Name()))
		}
		n := mapping("type", "string", "enum", names)
		if d := comment(e.Comments); d != "" {
			set(n, "description", d)
		}
		s.add(name, n)
	}
	return ref(name)
}

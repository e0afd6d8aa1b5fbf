package main

import (
	"regexp"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// countFields names the 64-bit integer fields reachable from md, which
// protojson writes as strings ("deleted": "5") and scripts want as numbers.
// Fencing tokens stay strings (an identifier, handed back as read), and so
// does any name a string field also has somewhere under md.
func countFields(md protoreflect.MessageDescriptor) map[string]bool {
	ints, other := map[string]bool{}, map[string]bool{}
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			name := string(fd.Name())
			switch fd.Kind() {
			case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
				if fd.IsList() || fd.IsMap() || strings.Contains(name, "token") {
					other[name] = true
				} else {
					ints[name] = true
				}
			case protoreflect.MessageKind, protoreflect.GroupKind:
				other[name] = true
				if fd.IsMap() {
					if v := fd.MapValue(); v.Message() != nil {
						walk(v.Message())
					}
				} else {
					walk(fd.Message())
				}
			default:
				other[name] = true
			}
		}
	}
	walk(md)
	for name := range other {
		delete(ints, name)
	}
	return ints
}

// quotedInteger is one protojson field whose value is a quoted integer, as
// json.Indent lays it out.
var quotedInteger = regexp.MustCompile(`"([a-z0-9_]+)": "(-?[0-9]+)"`)

// countsAsNumbers unquotes the values of the count fields in indented
// protojson. An escaped quote cannot match, so text inside a string value
// is left alone.
func countsAsNumbers(indented []byte, counts map[string]bool) []byte {
	return quotedInteger.ReplaceAllFunc(indented, func(m []byte) []byte {
		sub := quotedInteger.FindSubmatch(m)
		if !counts[string(sub[1])] {
			return m
		}
		return []byte(`"` + string(sub[1]) + `": ` + string(sub[2]))
	})
}

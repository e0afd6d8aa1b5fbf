package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// unknownField returns the path of the first member of the JSON object
// data that msg does not define (by its JSON or its proto name), looking
// into nested messages and lists of messages, e.g. "items[2].digset"; ""
// when it finds none. Well-known types have JSON forms of their own
// (a Duration is a string) and are not looked into.
//
// It runs only after protojson refused data for an unknown field, to say
// which one: protojson's own message is text, not a stable field name.
func unknownField(data []byte, msg protoreflect.MessageDescriptor) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return ""
	}
	// In name order, so that a body with two unknown members always names
	// the same one.
	for _, name := range slices.Sorted(maps.Keys(members)) {
		fd := msg.Fields().ByJSONName(name)
		if fd == nil {
			fd = msg.Fields().ByName(protoreflect.Name(name))
		}
		if fd == nil {
			return name
		}
		if inner := unknownIn(members[name], fd); inner != "" {
			return name + inner
		}
	}
	return ""
}

// unknownIn looks for an unknown member inside the value of field fd.
func unknownIn(value json.RawMessage, fd protoreflect.FieldDescriptor) string {
	if fd.Message() == nil || fd.IsMap() || strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
		return ""
	}
	if !fd.IsList() {
		if inner := unknownField(value, fd.Message()); inner != "" {
			return "." + inner
		}
		return ""
	}
	var items []json.RawMessage
	if json.Unmarshal(value, &items) != nil {
		return ""
	}
	for i, item := range items {
		if inner := unknownField(item, fd.Message()); inner != "" {
			return "[" + strconv.Itoa(i) + "]." + inner
		}
	}
	return ""
}

// unknownFieldProblem is what the refusal says of the field.
func unknownFieldProblem(msg protoreflect.MessageDescriptor) string {
	return fmt.Sprintf("is not a field of %s; a misspelled field would otherwise be ignored and change what the call does", msg.FullName())
}

package rpcerrors

import (
	"sort"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The server's reasons are exactly the values of the proto enum
// ErrorReason (less ERROR_REASON_UNSPECIFIED), which is the list every
// client reads: a reason added on one side only fails here.
func TestReasonsEqualTheProtoEnum(t *testing.T) {
	var fromEnum []string
	values := dedupv1.ErrorReason(0).Descriptor().Values()
	for i := range values.Len() {
		v := values.Get(i)
		if v.Number() == protoreflect.EnumNumber(dedupv1.ErrorReason_ERROR_REASON_UNSPECIFIED) {
			continue
		}
		fromEnum = append(fromEnum, string(v.Name()))
	}
	server := append([]string(nil), Reasons...)
	sort.Strings(fromEnum)
	sort.Strings(server)
	if len(fromEnum) != len(server) {
		t.Fatalf("server reasons %v, enum ErrorReason %v", server, fromEnum)
	}
	for i := range server {
		if server[i] != fromEnum[i] {
			t.Fatalf("server reasons %v, enum ErrorReason %v", server, fromEnum)
		}
	}
}

// Every reason Status can put on the wire is one of Reasons.
func TestStatusSendsOnlyListedReasons(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range Reasons {
		listed[r] = true
	}
	sent := []string{ReasonInvalidField, ReasonInternal}
	for _, c := range errorClasses {
		sent = append(sent, c.reason)
	}
	for _, r := range sent {
		if !listed[r] {
			t.Errorf("Status can send %q, which Reasons does not list", r)
		}
	}
}

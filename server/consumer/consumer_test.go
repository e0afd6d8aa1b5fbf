package consumer

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestOfReadsEveryDedupServiceRequest: each request type of the service is
// found through its descriptor, so a new request type needs no code here.
func TestOfReadsEveryDedupServiceRequest(t *testing.T) {
	methods := dedupv1.File_dedup_v1_dedup_proto.Services().ByName("DedupService").Methods()
	if methods.Len() == 0 {
		t.Fatal("DedupService has no methods")
	}
	for i := range methods.Len() {
		in := methods.Get(i).Input()
		fd := in.Fields().ByName(fieldName)
		if fd == nil {
			t.Errorf("%s has no consumer field", in.FullName())
		}
	}
	cases := []struct {
		name      string
		req       any
		want      string
		wantNamed bool
	}{
		{"claim", &dedupv1.ClaimRequest{Consumer: "payments", Key: "k"}, "payments", true},
		{"list", &dedupv1.ListRecordsRequest{Consumer: "inventory"}, "inventory", true},
		{"empty consumer", &dedupv1.LookupRequest{Key: "k"}, "", true},
		{"message without the field", &emptypb.Empty{}, "", false},
		{"string field of another name", wrapperspb.String("payments"), "", false},
		{"not a message", "payments", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, named := FromContext(NewContext(context.Background(), tc.req))
			if got != tc.want || named != tc.wantNamed {
				t.Fatalf("consumer = %q (named %v), want %q (named %v)", got, named, tc.want, tc.wantNamed)
			}
		})
	}
}

// TestValidIsPattern: the hand-written Valid answers as Pattern does, on
// names at and around every boundary the pattern draws.
func TestValidIsPattern(t *testing.T) {
	cases := []string{"", "a", "0", "payments", "a.b_c-d", ".a", "_a", "-a", "A", "aB", "a b", "a/b",
		"é", "a\x00", "a\n", "payments\n", strings.Repeat("a", 127), strings.Repeat("a", 128),
		strings.Repeat("a", 129), "a" + strings.Repeat("-", 127), "a" + strings.Repeat("-", 128)}
	for c := range 256 {
		cases = append(cases, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, s := range cases {
		if got, want := Valid(s), Pattern.MatchString(s); got != want {
			t.Errorf("Valid(%q) = %v, Pattern says %v", s, got, want)
		}
	}
}

func FuzzValidIsPattern(f *testing.F) {
	f.Add("payments")
	f.Add("a.b-c_d")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), Pattern.MatchString(s); got != want {
			t.Fatalf("Valid(%q) = %v, Pattern says %v", s, got, want)
		}
	})
}

// TestOfAgreesWithReflection: for every message type linked into the
// server (dedupd's requests, health, reflection, the well-known types),
// Of's getter path gives what the descriptor says.
func TestOfAgreesWithReflection(t *testing.T) {
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		m := mt.New()
		fd := m.Descriptor().Fields().ByName(fieldName)
		if fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() {
			m.Set(fd, protoreflect.ValueOfString("payments"))
			n++
		}
		req := m.Interface()
		gotName, gotNamed := Of(req)
		wantName, wantNamed := ofByReflection(req)
		if gotName != wantName || gotNamed != wantNamed {
			t.Errorf("%s: Of = %q, %v; reflection says %q, %v", mt.Descriptor().FullName(), gotName, gotNamed, wantName, wantNamed)
		}
		return true
	})
	if n < 10 {
		t.Fatalf("only %d messages with a consumer field are registered; the test reads none of dedupd's", n)
	}
}

// TestFromContextThroughOtherValues: the consumer is found under contexts
// that later interceptors wrap around it, and a context without one has none.
func TestFromContextThroughOtherValues(t *testing.T) {
	type otherKey struct{}
	ctx := NewContext(context.Background(), &dedupv1.ClaimRequest{Consumer: "payments"})
	wrapped, cancel := context.WithCancel(context.WithValue(ctx, otherKey{}, 1))
	defer cancel()
	if got, named := FromContext(wrapped); got != "payments" || !named {
		t.Fatalf("under other values: consumer = %q (named %v), want payments", got, named)
	}
	if wrapped.Value(otherKey{}) != 1 {
		t.Fatal("a value put in after the consumer is lost")
	}
	if got, named := FromContext(context.Background()); got != "" || named {
		t.Fatalf("without one: consumer = %q (named %v)", got, named)
	}
	cancel()
	if ctx.Err() != nil {
		t.Fatal("cancelling a child cancelled the consumer's context")
	}
}

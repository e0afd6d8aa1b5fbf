package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The multi-row statements name and type the parameters that
// planStreamUnread gives the single-row ones: as many, each of the SQL
// type its Go type encodes to, for an insert and for an update.
func TestStreamWriteParamsAreThePlansArgs(t *testing.T) {
	sqlTypeOf := map[string]string{"string": "TEXT", "*string": "TEXT", "int64": "INT8", "[]uint8": "BYTEA",
		"time.Time": "TIMESTAMPTZ", "*time.Time": "TIMESTAMPTZ", "bool": "BOOL"}
	policy := store.StreamPolicy{DefaultLeaseTTL: time.Minute, StreamTTL: time.Hour}
	claim := store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1, Owner: "o", Policy: policy}
	s := &Store{streams: newStreamCache()}
	insert, ok := s.planStreamUnread("claim stream", recordKey{"c", "s"}, nil, claim)
	if !ok {
		t.Fatal("no plan for a first claim")
	}
	stored := insert.plan.at(time.Now())
	complete := store.CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: 1,
		FencingToken: stored.Stream.FencingToken, Policy: policy}
	update, ok := s.planStreamUnread("complete stream", recordKey{"c", "s"}, &cachedStream{st: stored.Stream, version: 1}, complete)
	if !ok {
		t.Fatal("no plan for a complete of a remembered stream")
	}
	for _, tc := range []struct {
		name string
		args []any
		want int
	}{{"insert", insert.args, streamInsertParams}, {"update", update.args, len(streamWriteParams)}} {
		if len(tc.args) != tc.want {
			t.Fatalf("%s: %d arguments, %d parameters", tc.name, len(tc.args), tc.want)
		}
		for i, a := range tc.args {
			if got, p := sqlTypeOf[fmt.Sprintf("%T", a)], streamWriteParams[i]; got != p.sqlType {
				t.Errorf("%s: argument %d (%s) is a %T (%s), the parameter a %s", tc.name, i+1, p.name, a, got, p.sqlType)
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestCountsAsNumbers: the counts of a purge and of stats print as JSON
// numbers, a fencing token stays a string, and text that only looks like a
// count inside a string value is untouched.
func TestCountsAsNumbers(t *testing.T) {
	var out bytes.Buffer
	a := &app{}
	a.std.out = &out
	if err := a.printJSON(&dedupv1.PurgeResponse{Deleted: 5, Done: true}); err != nil {
		t.Fatal(err)
	}
	var purge map[string]any
	if err := json.Unmarshal(out.Bytes(), &purge); err != nil {
		t.Fatal(err)
	}
	if purge["deleted"] != float64(5) {
		t.Errorf("purge: deleted is %#v in %s, want the number 5", purge["deleted"], out.String())
	}

	const trap = `{"deleted": "7"}`
	rec := &dedupv1.Record{Key: trap, FencingToken: 9}
	out.Reset()
	if err := a.printJSON(rec); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["key"] != trap || got["fencing_token"] != "9" {
		t.Errorf("record: key %#v, fencing_token %#v in %s; want the key as sent and the token a string", got["key"], got["fencing_token"], out.String())
	}
}

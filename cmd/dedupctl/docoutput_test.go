package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docExample is one ```console block of docs/dedupctl.md: a `$ dedupctl`
// command and the output the doc shows for it.
type docExample struct {
	args   []string
	output string
}

// docExamples reads the console blocks of the doc page.
func docExamples(t *testing.T, page string) []docExample {
	t.Helper()
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	for _, block := range regexp.MustCompile("(?s)```console\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		cmd, output, _ := strings.Cut(block[1], "\n")
		args, ok := strings.CutPrefix(cmd, "$ dedupctl ")
		if !ok {
			t.Fatalf("%s: a console block starts with %q, not $ dedupctl", page, cmd)
		}
		out = append(out, docExample{args: strings.Fields(args), output: output})
	}
	return out
}

// TestDocOutputsMatchTheTool: every `$ dedupctl` command shown with its
// output in docs/dedupctl.md runs against a real dedupd seeded as the doc
// says, and prints output of the shape the doc shows (outputShape), so
// that the doc and the tool cannot drift apart again (issue 32 item 9).
func TestDocOutputsMatchTheTool(t *testing.T) {
	examples := docExamples(t, "../../docs/dedupctl.md")
	if len(examples) < 5 {
		t.Fatalf("docs/dedupctl.md shows %d outputs; the section was lost", len(examples))
	}
	s := startDedupd(t)
	s.ok(t, "policy", "set", "payments", "--completed-ttl", "7d")
	s.complete(t, "payments", "charge-42", []byte("ch_1"))
	for _, ex := range examples {
		t.Run(strings.Join(ex.args, " "), func(t *testing.T) {
			got := s.ok(t, ex.args...).stdout
			if want, have := outputShape(ex.output), outputShape(got); !slices.Equal(want, have) {
				t.Errorf("the doc shows\n%s\nthe tool prints\n%s\nshapes differ:\ndoc  %q\ntool %q", ex.output, got, want, have)
			}
		})
	}
}

// headerLine is a table's header: column names in capitals.
var headerLine = regexp.MustCompile(`^[A-Z_]+( +[A-Z_]+)*$`)

// outputShape is what must agree between the doc and the tool, and not
// what changes from run to run (times, ages, counts): for JSON, every key
// with its value's type; for a table, its column headers and the first
// cell of each row (field names, consumers, keys); lines of prose before a
// table are left out.
func outputShape(out string) []string {
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err == nil {
		return jsonShape("", doc)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, line := range lines {
		if headerLine.MatchString(strings.TrimSpace(line)) {
			lines = lines[i:]
			break
		}
	}
	var shape []string
	for i, line := range lines {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case i == 0 && headerLine.MatchString(strings.TrimSpace(line)):
			shape = append(shape, "columns "+strings.Join(fields, " "))
		default:
			shape = append(shape, "row "+fields[0])
		}
	}
	return shape
}

// jsonShape lists path: type for every value of v; an array stands for its
// elements by its first one.
func jsonShape(path string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		shape := []string{path + ": object"}
		for _, k := range keys {
			shape = append(shape, jsonShape(path+"."+k, v[k])...)
		}
		return shape
	case []any:
		if len(v) == 0 {
			return []string{path + ": empty array"}
		}
		return append([]string{path + ": array"}, jsonShape(path+"[]", v[0])...)
	case nil:
		return []string{path + ": null"}
	}
	return []string{fmt.Sprintf("%s: %T", path, v)}
}

// TestOutputShape: the comparison itself, on hand-written outputs, tells
// apart what it must and ignores what changes between runs.
func TestOutputShape(t *testing.T) {
	table := "policy of x\nKEY  STATE\nk1   COMPLETED  5m ago\n"
	cases := []struct {
		name      string
		a, b      string
		wantEqual bool
	}{
		{"same table, other values", table, "other prose\nKEY  STATE\nk1   PENDING  now\n", true},
		{"a renamed column", table, "KEY  STATE_\nk1   COMPLETED\n", false},
		{"another row", table, "KEY  STATE\nk2   COMPLETED\n", false},
		{"same JSON, other values", `{"a": 1, "b": ["x"]}`, `{"b": ["y", "z"], "a": 7}`, true},
		{"a count as a string", `{"deleted": 0}`, `{"deleted": "0"}`, false},
		{"a key missing", `{"a": 1, "b": null}`, `{"a": 1}`, false},
		{"null for an object", `{"a": null}`, `{"a": {}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := slices.Equal(outputShape(c.a), outputShape(c.b)); got != c.wantEqual {
				t.Errorf("equal shapes %v, want %v: %q vs %q", got, c.wantEqual, outputShape(c.a), outputShape(c.b))
			}
		})
	}
}

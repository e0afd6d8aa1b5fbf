package resultview

import (
	"strings"
	"testing"
)

// gatewayResponse is a response in the form the HTTP gateway stores
// (client/httpidem: status line, sorted headers, Content-Length, body),
// written out by hand.
const gatewayResponse = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nLocation: /orders/7\r\nContent-Length: 16\r\n\r\n{\"id\":7,\"ok\":1}\n"

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name           string
		in             []byte
		kind           Kind
		summary        string
		detailContains []string
	}{
		{"empty", nil, Empty, "-", []string{"-"}},
		{"text", []byte("shipped"), Text, "shipped", []string{"shipped"}},
		{"text on lines", []byte("a\nb"), Text, "a b", []string{"a\nb"}},
		{"json object", []byte(`{"a": 1, "b": [true]}`), JSON, `{"a":1,"b":[true]}`, []string{"{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}"}},
		{"a number is text", []byte("42"), Text, "42", []string{"42"}},
		{"gateway response", []byte(gatewayResponse), HTTP, `HTTP 201 Created, application/json: {"id":7,"ok":1}`,
			[]string{"HTTP/1.1 201 Created\n", "Content-Type: application/json\n", "Location: /orders/7\n", "\n\n{\n  \"id\": 7,"}},
		{"status line but bytes after the body", []byte(gatewayResponse + "junk"), Text, "", nil},
		{"binary", []byte{0xff, 0x00, 0x01}, Binary, "hex:ff0001 (3 bytes)", []string{"00000000  ff 00 01"}},
		{"terminal escape in text", []byte("a\x1b[2Jb"), Binary, "hex:611b5b324a62 (6 bytes)", nil},
		{"terminal escape in JSON", []byte("{\"a\":\"\x1b\"}"), Binary, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decode(tc.in)
			if v.Kind != tc.kind {
				t.Fatalf("kind %s, want %s", v.Kind, tc.kind)
			}
			if tc.summary != "" && v.Summary() != tc.summary {
				t.Errorf("Summary() = %q, want %q", v.Summary(), tc.summary)
			}
			for _, want := range tc.detailContains {
				if !strings.Contains(v.Detail(), want) {
					t.Errorf("Detail() = %q, want it to contain %q", v.Detail(), want)
				}
			}
			if strings.ContainsRune(v.Summary()+v.Detail(), '\x1b') {
				t.Errorf("an escape character is shown raw")
			}
		})
	}
}

func TestDetailIsBounded(t *testing.T) {
	for _, in := range [][]byte{[]byte(strings.Repeat("x", 1<<20)), make([]byte, 1<<20)} {
		d := Decode(in).Detail()
		if len(d) > 5*MaxShown || !strings.Contains(d, "more bytes") {
			t.Errorf("%s result of 1 MiB shown as %d bytes", Decode(in).Kind, len(d))
		}
	}
}

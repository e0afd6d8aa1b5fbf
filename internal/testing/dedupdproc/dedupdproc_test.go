package dedupdproc

import "testing"

func TestParseReadyFile(t *testing.T) {
	for _, tc := range []struct{ content, addr, metrics string }{
		{"127.0.0.1:4000\n", "127.0.0.1:4000", ""},
		{"127.0.0.1:4000\nmetrics 127.0.0.1:4001\n", "127.0.0.1:4000", "127.0.0.1:4001"},
		{"[::1]:4000\nmetrics [::1]:4001", "[::1]:4000", "[::1]:4001"},
		{"", "", ""},
	} {
		addr, metrics := ParseReadyFile(tc.content)
		if addr != tc.addr || metrics != tc.metrics {
			t.Errorf("ParseReadyFile(%q) = %q, %q; want %q, %q", tc.content, addr, metrics, tc.addr, tc.metrics)
		}
	}
}

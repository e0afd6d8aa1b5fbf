package version

import (
	"encoding/json"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name       string
		bi         debug.BuildInfo
		want       Info
		wantString string
	}{
		{
			name:       "go install of a release",
			bi:         debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}},
			want:       Info{Version: "v1.4.0", GoVersion: "go1.26.8"},
			wantString: "v1.4.0 go1.26.8",
		},
		{
			name: "checkout built with -buildvcs=true",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
				{Key: "vcs.time", Value: "2026-12-01T20:00:00Z"}, {Key: "vcs.modified", Value: "false"},
			}},
			want:       Info{Version: "(devel)", Revision: rev, Time: "2026-12-01T20:00:00Z", GoVersion: "go1.26.8"},
			wantString: "(devel) (0123456789ab) go1.26.8",
		},
		{
			name: "modified checkout",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
			}},
			want:       Info{Version: "(devel)", Revision: "abc", Modified: true, GoVersion: "go1.26.8"},
			wantString: "(devel) (abc+dirty) go1.26.8",
		},
		{
			name:       "no module version",
			bi:         debug.BuildInfo{},
			want:       Info{Version: "unknown"},
			wantString: "unknown",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromBuildInfo(&tt.bi)
			if got != tt.want {
				t.Errorf("FromBuildInfo = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.wantString {
				t.Errorf("String = %q, want %q", s, tt.wantString)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	var text, js strings.Builder
	if err := Print(&text, "dedupd", "text"); err != nil {
		t.Fatal(err)
	}
	if err := Print(&js, "dedupd", "json"); err != nil {
		t.Fatal(err)
	}
	// A test binary has the toolchain's own version; the oracle is the
	// runtime, not Get.
	if want := "dedupd "; !strings.HasPrefix(text.String(), want) || !strings.Contains(text.String(), runtime.Version()) {
		t.Errorf("text = %q, want %q... with %s", text.String(), want, runtime.Version())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(js.String()), &got); err != nil {
		t.Fatalf("json %q: %v", js.String(), err)
	}
	if got["program"] != "dedupd" || got["go_version"] != runtime.Version() || got["version"] == "" {
		t.Errorf("json = %v", got)
	}
	if err := Print(io.Discard, "dedupd", "yaml"); err == nil {
		t.Error("an unknown format was accepted")
	}
}

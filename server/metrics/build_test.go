package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/internal/version"
)

func TestExportBuild(t *testing.T) {
	m := New()
	m.ExportBuild(version.Info{Version: "v1.4.0", Revision: "abc123", GoVersion: "go1.26.8"})
	want := `
# HELP dedupd_build_info Always 1; the labels name the running build (module version, VCS revision, Go toolchain).
# TYPE dedupd_build_info gauge
dedupd_build_info{goversion="go1.26.8",revision="abc123",version="v1.4.0"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "dedupd_build_info"); err != nil {
		t.Error(err)
	}
}

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/internal/version"
)

// ExportBuild exports dedupd_build_info: always 1, with the build's
// identity in its labels, so that a dashboard can tell which build each
// server runs and an alert can join on it.
func (m *Metrics) ExportBuild(info version.Info) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dedupd_build_info",
		Help: "Always 1; the labels name the running build (module version, VCS revision, Go toolchain).",
		ConstLabels: prometheus.Labels{
			"version":   info.Version,
			"revision":  info.Revision,
			"goversion": info.GoVersion,
		},
	})
	g.Set(1)
	m.Registry.MustRegister(g)
}

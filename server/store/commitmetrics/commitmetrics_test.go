package commitmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// histogram reads the count and sum of one store and kind's series.
func histogram(t *testing.T, s *Set, store string, k Kind) (count uint64, sum float64) {
	t.Helper()
	var m dto.Metric
	if err := s.commands.WithLabelValues(store, k.String()).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestRecorder(t *testing.T) {
	tests := []struct {
		name        string
		record      func(r *Recorder)
		kind        Kind
		wantCount   uint64
		wantSum     float64
		wantCommits float64
		wantSyncs   float64
	}{
		{"one commit of 32 claims", func(r *Recorder) { r.Commit(KindClaim, 32) }, KindClaim, 1, 32, 1, 0},
		{"empty commits count nothing", func(r *Recorder) { r.Commit(KindClaim, 0); r.CommitGroup(&Group{}) }, KindClaim, 0, 0, 0, 0},
		{"a mixed group is one commit", func(r *Recorder) {
			var g Group
			g.Add(KindClaim, 3)
			g.Add(KindFinish, 2)
			g.Add(KindClaim, 1)
			r.CommitGroup(&g)
		}, KindClaim, 1, 4, 1, 0},
		{"fsyncs", func(r *Recorder) { r.Commit(KindStream, 1); r.Fsync(); r.Fsync() }, KindStream, 1, 1, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			r := s.For(StoreSQLite, true)
			tt.record(r)
			count, sum := histogram(t, s, StoreSQLite, tt.kind)
			if count != tt.wantCount || sum != tt.wantSum {
				t.Errorf("histogram count %d sum %v, want %d and %v", count, sum, tt.wantCount, tt.wantSum)
			}
			if got := counter(t, r.commits); got != tt.wantCommits {
				t.Errorf("commits %v, want %v", got, tt.wantCommits)
			}
			if got := counter(t, r.syncs); got != tt.wantSyncs {
				t.Errorf("fsyncs %v, want %v", got, tt.wantSyncs)
			}
		})
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var s *Set
	r := s.For(StorePostgres, false)
	r.Commit(KindClaim, 1) // must not panic
	r.Fsync()
	New().For(StorePostgres, false).Fsync() // no fsync series: nothing
}

func TestSeriesStartAtZero(t *testing.T) {
	s := New()
	s.For(StorePebble, true)
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range families {
		got[f.GetName()] = len(f.GetMetric())
	}
	want := map[string]int{CommandsName: int(numKinds), CommitsName: 1, FsyncsName: 1}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: %d series, want %d", name, got[name], n)
		}
	}
}

package pebblestore

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Engine metrics: what an operator needs to tell a Pebble store that keeps
// up from one falling behind (compaction debt, files piling up in L0, write
// stalls: events.go), how
// much it writes for what it is given (WAL and table bytes), and whether
// the filter of record keys is built and how full. They are read from
// Pebble at each scrape, so they cost nothing between scrapes.

var (
	metricDiskBytes = prometheus.NewDesc("dedupd_pebble_disk_bytes",
		"Bytes the Pebble store takes on disk: tables, WAL and manifests.", nil, nil)
	metricWALBytes = prometheus.NewDesc("dedupd_pebble_wal_bytes_written_total",
		"Bytes written to Pebble's write-ahead log.", nil, nil)
	metricTableBytes = prometheus.NewDesc("dedupd_pebble_table_bytes_written_total",
		"Bytes Pebble's flushes and compactions wrote to tables; over the WAL's bytes, its write amplification.", nil, nil)
	metricFlushes = prometheus.NewDesc("dedupd_pebble_flushes_total",
		"Memtables Pebble flushed to tables.", nil, nil)
	metricCompactions = prometheus.NewDesc("dedupd_pebble_compactions_total",
		"Compactions Pebble ran.", nil, nil)
	metricDebt = prometheus.NewDesc("dedupd_pebble_compaction_debt_bytes",
		"Bytes Pebble estimates it must compact to bring its levels into shape; a debt that keeps growing means writes outrun compactions.", nil, nil)
	metricL0Files = prometheus.NewDesc("dedupd_pebble_l0_files",
		"Tables in Pebble's level 0, which every read consults; Pebble slows writes when they pile up.", nil, nil)
	metricMisuses = prometheus.NewDesc("dedupd_pebble_api_misuses_total",
		"Possible misuses of Pebble's API that it reported, such as an index entry written over itself (see the server log).", nil, nil)
	metricStalls = prometheus.NewDesc("dedupd_pebble_write_stalls_total",
		"Times Pebble held every write back because flushes or compactions fell behind; calls wait meanwhile.", nil, nil)
	metricStallSeconds = prometheus.NewDesc("dedupd_pebble_write_stall_seconds_total",
		"Seconds writes have spent held back by Pebble's write stalls, the one in progress included.", nil, nil)
	metricFilterBytes = prometheus.NewDesc("dedupd_pebble_key_filter_bytes",
		"Bytes of the filter of record keys that answers claims of new keys without a read; 0 until it is built.", nil, nil)
	metricFilterKeys = prometheus.NewDesc("dedupd_pebble_key_filter_keys",
		"Keys added to the filter of record keys since it was built, against dedupd_pebble_key_filter_capacity_keys.", nil, nil)
	metricFilterCapacity = prometheus.NewDesc("dedupd_pebble_key_filter_capacity_keys",
		"Keys the filter of record keys holds at its designed rate of false positives.", nil, nil)
	metricFilterBuilds = prometheus.NewDesc("dedupd_pebble_key_filter_builds_total",
		"Filters of record keys built and installed (at start, then each time the filter fills).", nil, nil)
)

// Collector is the store's engine metrics, to register with the server's
// registry. Once the store is closed it reports nothing.
func (s *Store) Collector() prometheus.Collector { return engineMetrics{s} }

type engineMetrics struct{ s *Store }

func (engineMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{metricDiskBytes, metricWALBytes, metricTableBytes, metricFlushes,
		metricCompactions, metricDebt, metricL0Files, metricMisuses, metricStalls, metricStallSeconds,
		metricFilterBytes, metricFilterKeys, metricFilterCapacity, metricFilterBuilds} {
		ch <- d
	}
}

func (e engineMetrics) Collect(ch chan<- prometheus.Metric) {
	s := e.s
	if s.enter() != nil {
		return
	}
	defer s.leave()
	m := s.db.Metrics()
	total := m.Total()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(metricDiskBytes, float64(m.DiskSpaceUsage()))
	counter(metricWALBytes, float64(m.WAL.BytesWritten))
	counter(metricTableBytes, float64(total.TableBytesFlushed+total.TableBytesCompacted))
	counter(metricFlushes, float64(m.Flush.Count))
	counter(metricCompactions, float64(m.Compact.Count))
	gauge(metricDebt, float64(m.Compact.EstimatedDebt))
	gauge(metricL0Files, float64(m.Levels[0].TablesCount))
	counter(metricMisuses, float64(s.events.misuses.Load()))
	counter(metricStalls, float64(s.events.stalls.Load()))
	counter(metricStallSeconds, s.events.stallSeconds())
	var bytes, keys, capacity float64
	if f := s.filter.current.Load(); f != nil {
		bytes, keys, capacity = float64(8*len(f.words)), float64(f.adds.Load()), float64(f.capacity)
	}
	gauge(metricFilterBytes, bytes)
	gauge(metricFilterKeys, keys)
	gauge(metricFilterCapacity, capacity)
	counter(metricFilterBuilds, float64(s.filter.builds.Load()))
}

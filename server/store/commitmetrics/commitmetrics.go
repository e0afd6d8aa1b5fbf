// Package commitmetrics defines the group-commit metrics every store
// shares: how many commands each commit carries (a histogram per store and
// kind) and how many commits, and for the embedded stores fsyncs, there
// were (counters, so that rate() gives commits and fsyncs per second). An
// operator reads group commit at work from them: a claim rate far above
// the commit rate means many claims share each commit.
//
// The definitions live here, not in server/metrics, so that the stores can
// record into them without importing the server's metrics (which imports
// the store). server/metrics registers the Set; each store records through
// the Recorder it is given, and a nil Recorder records nothing.
package commitmetrics

import "github.com/prometheus/client_golang/prometheus"

// Metric names, for docs and tests.
const (
	CommandsName = "dedupd_store_commit_commands"
	CommitsName  = "dedupd_store_commits_total"
	FsyncsName   = "dedupd_store_fsyncs_total"
)

// Store label values.
const (
	StorePostgres = "postgres"
	StoreSQLite   = "sqlite"
	StorePebble   = "pebble"
)

// Kind is what a commit's commands are.
type Kind uint8

const (
	// KindClaim is a Claim of one key (a fresh claim's insert, or a
	// claim's read-modify-write).
	KindClaim Kind = iota
	// KindFinish is a Complete, Reject or ExtendLease of one key.
	KindFinish
	// KindStream is a stream write (a ClaimStream's, or a stream finish's).
	KindStream
	// KindPoll is one item of a ClaimBatch or FinishBatch written by a
	// multi-row statement of its own.
	KindPoll
	// KindOther is any other write (admin, reaper).
	KindOther
	numKinds
)

var kindNames = [numKinds]string{"claim", "finish", "stream", "poll", "other"}

// String is the kind's label value.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Set holds the collectors; register it (it is a prometheus.Collector).
type Set struct {
	commands       *prometheus.HistogramVec
	commits, syncs *prometheus.CounterVec
}

// New creates the collectors, unregistered.
func New() *Set {
	return &Set{
		commands: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: CommandsName,
			Help: "Commands each store commit carried, by store (postgres, sqlite, pebble) and kind (claim, finish, stream, poll, other); a commit carrying several kinds is observed once per kind. _count is commits, _sum commands.",
			// Powers of two: group commit batches up to 32 by default,
			// a ClaimBatch up to 1,000 items.
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{"store", "kind"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: CommitsName,
			Help: "Store transactions committed with writes, by store; rate() is commits per second.",
		}, []string{"store"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: FsyncsName,
			Help: "fsyncs (or fdatasyncs) the embedded store asked for to make commits durable, by store.",
		}, []string{"store"}),
	}
}

// Describe implements prometheus.Collector.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	s.commands.Describe(ch)
	s.commits.Describe(ch)
	s.syncs.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	s.commands.Collect(ch)
	s.commits.Collect(ch)
	s.syncs.Collect(ch)
}

// For returns the recorder of one store, its series exported at zero from
// now on (a series born at its first increment hides that increment from
// rate()). syncs says the store counts its own fsyncs. A nil Set gives a
// nil Recorder.
func (s *Set) For(store string, syncs bool) *Recorder {
	if s == nil {
		return nil
	}
	r := &Recorder{commits: s.commits.WithLabelValues(store)}
	for k := range numKinds {
		r.commands[k] = s.commands.WithLabelValues(store, k.String())
	}
	if syncs {
		r.syncs = s.syncs.WithLabelValues(store)
	}
	return r
}

// Recorder records one store's commits; its series are looked up once.
// A nil Recorder records nothing. It is safe for concurrent use.
type Recorder struct {
	commands [numKinds]prometheus.Observer
	commits  prometheus.Counter
	syncs    prometheus.Counter
}

// Commit records one commit carrying n commands, all of kind k.
func (r *Recorder) Commit(k Kind, n int) {
	if r == nil || n <= 0 || k >= numKinds {
		return
	}
	r.commands[k].Observe(float64(n))
	r.commits.Inc()
}

// Group counts the commands of one commit by kind, as they join it.
type Group [numKinds]int

// Add counts n more commands of kind k.
func (g *Group) Add(k Kind, n int) {
	if k < numKinds {
		g[k] += n
	}
}

// CommitGroup records one commit carrying g's commands: each kind present
// observed once, one commit counted. An empty group records nothing.
func (r *Recorder) CommitGroup(g *Group) {
	if r == nil {
		return
	}
	carried := false
	for k, n := range g {
		if n > 0 {
			r.commands[k].Observe(float64(n))
			carried = true
		}
	}
	if carried {
		r.commits.Inc()
	}
}

// Fsync records one fsync. It records nothing unless the recorder was made
// with syncs.
func (r *Recorder) Fsync() {
	if r != nil && r.syncs != nil {
		r.syncs.Inc()
	}
}

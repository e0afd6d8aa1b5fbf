package pgstore

import "github.com/dedupd/dedupd/server/store/internal/sqlreadtest"

// StoppedReads are the admin reads that take the dialect, and so the clock,
// they read: the seam through which internal/sqlreadtest holds their SQL to
// the read rules.
var StoppedReads = sqlreadtest.Reads[*Store]{List: (*Store).listRecords, Purge: (*Store).purge, Stats: (*Store).stats, Ready: (*Store).readyStreams}

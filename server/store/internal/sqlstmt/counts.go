package sqlstmt

import (
	"strconv"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The grouped counts. count(CASE ...) rather than sum or FILTER: it is an
// INT on PostgreSQL and CockroachDB alike (CockroachDB's sum of INT is
// DECIMAL). A statement narrowed to one consumer is a text of its own
// rather than "$n = '' OR consumer = $n", which would keep a generic plan
// from seeking to the one consumer.

// Stats counts each consumer's records, or one consumer's, in one pass over
// the primary key, as store.ConsumerStats.Count counts a record; its
// argument is the consumer when one is true.
func Stats(d Dialect, one bool) string {
	where := ""
	if one {
		where = " WHERE consumer = " + d.Arg(1)
	}
	return `SELECT consumer,
    count(CASE WHEN live AND state = 'PENDING' THEN 1 END),
    count(CASE WHEN live AND state = 'COMPLETED' THEN 1 END),
    count(CASE WHEN live AND state = 'REJECTED' THEN 1 END),
    count(CASE WHEN live AND state = 'RELEASED' THEN 1 END),
    count(CASE WHEN live AND state = 'PENDING' AND lease_expires_at <= ` + d.Now + ` THEN 1 END),
    min(CASE WHEN live AND state = 'PENDING' THEN updated_at END),
    count(CASE WHEN NOT live THEN 1 END)
FROM (SELECT consumer, state, updated_at, lease_expires_at, expires_at > ` + d.Now + ` AS live
      FROM dedup_records` + where + `) AS r
GROUP BY consumer
ORDER BY consumer`
}

// StreamStats counts each consumer's live streams, or one consumer's, in
// one pass; expired rows are left out by the WHERE, so a consumer with none
// live is absent. Its argument is the consumer when one is true.
func StreamStats(d Dialect, one bool) string {
	and := ""
	if one {
		and = " AND consumer = " + d.Arg(1)
	}
	return `SELECT consumer,
    count(*),
    count(CASE WHEN in_flight <> 0 THEN 1 END),
    count(CASE WHEN in_flight <> 0 AND lease_expires_at <= ` + d.Now + ` THEN 1 END),
    min(CASE WHEN in_flight <> 0 THEN updated_at END)
FROM dedup_streams
WHERE expires_at > ` + d.Now + and + `
GROUP BY consumer
ORDER BY consumer`
}

// PendingLeases sums up the live Pending records per consumer. Like
// InFlightLeases it reads only the rows of a partial index
// (dedup_records_pending_lease, dedup_streams_in_flight): the WHERE repeats
// the index's predicate, so that the planner uses it on every database.
func PendingLeases(d Dialect) string { return leases(d, "dedup_records", "state = 'PENDING'") }

// InFlightLeases sums up the live streams' claims in flight per consumer.
func InFlightLeases(d Dialect) string { return leases(d, "dedup_streams", "in_flight <> 0") }

func leases(d Dialect, table, held string) string {
	return `SELECT consumer, count(*),
    count(CASE WHEN lease_expires_at <= ` + d.Now + ` THEN 1 END), min(updated_at)
FROM ` + table + `
WHERE ` + held + ` AND expires_at > ` + d.Now + `
GROUP BY consumer
ORDER BY consumer`
}

// ReadyStreams lists the streams of a consumer (its argument) that
// store.ParkedReady says ClaimParked may pick, in stream order, at most
// store.ReadyCandidates.
func ReadyStreams(d Dialect) string {
	return `SELECT s.stream FROM dedup_streams s
WHERE s.consumer = ` + d.Arg(1) + ` AND s.parked > 0 AND s.mode = 'DENSE' AND s.expires_at > ` + d.Now + `
  AND (s.in_flight = 0 OR s.lease_expires_at <= ` + d.Now + `)
  AND EXISTS (SELECT 1 FROM dedup_parked p
              WHERE p.consumer = s.consumer AND p.stream = s.stream AND p.sequence = s.high_water + 1)
ORDER BY s.stream LIMIT ` + strconv.Itoa(store.ReadyCandidates)
}

// ScanStream reads a row of ReadyStreams.
func ScanStream(row Row) (string, error) {
	var stream string
	return stream, row.Scan(&stream)
}

// The rows of the counts. Each ends in a nullable least time, which a
// store reads as T and at turns into the time, zero for NULL.

// ScanStats reads a row of Stats.
func ScanStats[T any](row Row, at func(T) time.Time) (store.ConsumerStats, error) {
	var c store.ConsumerStats
	err := scanTimed(row, at, &c.OldestPendingAt, func(oldest *T) []any {
		return []any{&c.Consumer, &c.Pending, &c.Completed, &c.Rejected, &c.Released, &c.PendingLeaseExpired, oldest, &c.Expired}
	})
	return c, err
}

// ScanStreamStats reads a row of StreamStats.
func ScanStreamStats[T any](row Row, at func(T) time.Time) (store.ConsumerStreamStats, error) {
	var c store.ConsumerStreamStats
	err := scanTimed(row, at, &c.OldestInFlightAt, func(oldest *T) []any {
		return []any{&c.Consumer, &c.Streams, &c.InFlight, &c.LeaseExpired, oldest}
	})
	return c, err
}

// ScanLeaseStats reads a row of PendingLeases or InFlightLeases.
func ScanLeaseStats[T any](row Row, at func(T) time.Time) (store.LeaseStats, error) {
	var l store.LeaseStats
	err := scanTimed(row, at, &l.OldestUpdatedAt, func(oldest *T) []any {
		return []any{&l.Consumer, &l.Held, &l.Expired, oldest}
	})
	return l, err
}

// scanTimed scans row into the destinations that dests lists around the
// one time, which it reads as a T and sets *t to, by at.
func scanTimed[T any](row Row, at func(T) time.Time, t *time.Time, dests func(*T) []any) error {
	var v T
	if err := row.Scan(dests(&v)...); err != nil {
		return err
	}
	*t = at(v)
	return nil
}

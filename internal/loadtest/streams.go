package loadtest

import (
	"context"
	"fmt"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The stream scenario, stream-cycle: an operation claims the next event of
// a stream and completes it (ClaimStream + CompleteStream), each caller on
// a stream of its own, so nothing contends and every stream is written
// again and again, as an entity's events are.
//
// Its baseline is the raw single-row compare-and-set a user would write on
// a table shaped like dedupd's streams (primary key (consumer, stream), an
// expiry index): the claim one INSERT ... ON CONFLICT DO UPDATE ... WHERE
// the row expects this sequence and has no live claim, RETURNING the
// token; the complete one UPDATE fenced by sequence and token. Two
// statements an event, against dedupd's two calls.

// streamSide is what the stream scenario needs of either side.
type streamSide interface {
	claimStream(ctx context.Context, stream string, seq int64) (token int64, err error)
	completeStream(ctx context.Context, stream string, seq, token int64) error
}

// streamLane is one caller's stream and the next sequence it claims.
type streamLane struct {
	stream string
	next   int64
}

// streamCycle returns the scenario's operation on this side: each
// operation takes a free lane (there are as many as callers, so none
// waits), runs its next event, and gives the lane back.
func (s *scenarios) streamCycle() operation {
	lanes := make(chan *streamLane, s.concurrency)
	for i := range s.concurrency {
		lanes <- &streamLane{stream: fmt.Sprintf("stream-%d", i), next: 1}
	}
	ss := s.side.(streamSide)
	return func(ctx context.Context, _ int64) error {
		var lane *streamLane
		select {
		case lane = <-lanes:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { lanes <- lane }()
		token, err := ss.claimStream(ctx, lane.stream, lane.next)
		if err != nil {
			return err
		}
		if err := ss.completeStream(ctx, lane.stream, lane.next, token); err != nil {
			return err
		}
		lane.next++
		return nil
	}
}

// The dedupd side.

func (s *service) claimStream(ctx context.Context, stream string, seq int64) (int64, error) {
	res, err := dedupv1.NewStreamServiceClient(s.conn).ClaimStream(ctx, &dedupv1.ClaimStreamRequest{
		Consumer: s.consumer, Stream: s.keyPrefix + stream, Sequence: seq, Owner: "dedupctl-bench"})
	if err != nil {
		return 0, err
	}
	if res.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED {
		return 0, fmt.Errorf("claim of %s #%d: %s, want acquired", stream, seq, res.GetOutcome())
	}
	return res.GetFencingToken(), nil
}

func (s *service) completeStream(ctx context.Context, stream string, seq, token int64) error {
	_, err := dedupv1.NewStreamServiceClient(s.conn).CompleteStream(ctx, &dedupv1.CompleteStreamRequest{
		Consumer: s.consumer, Stream: s.keyPrefix + stream, Sequence: seq, FencingToken: token})
	return err
}

// The baseline side.

const (
	baselineStreamTable = `CREATE TABLE IF NOT EXISTS dedupd_bench_baseline_streams (
    consumer         TEXT        NOT NULL,
    stream           TEXT        NOT NULL,
    high_water       BIGINT      NOT NULL DEFAULT 0,
    in_flight        BIGINT      NOT NULL DEFAULT 0,
    fencing_token    BIGINT      NOT NULL DEFAULT 0,
    owner            TEXT        NOT NULL DEFAULT '',
    lease_expires_at TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    expires_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer, stream))`
	baselineStreamIndex = `CREATE INDEX IF NOT EXISTS dedupd_bench_baseline_streams_expires_at
    ON dedupd_bench_baseline_streams (expires_at)`

	// baselineStreamClaim claims sequence $3: the stream's first claim
	// inserts the row; a later one takes it only if the row expects $3
	// and holds no live claim.
	baselineStreamClaim = `INSERT INTO dedupd_bench_baseline_streams AS t
    (consumer, stream, in_flight, fencing_token, owner, lease_expires_at, updated_at, expires_at)
VALUES ($1, $2, $3, 1, $4, statement_timestamp() + INTERVAL '30 seconds', statement_timestamp(),
    statement_timestamp() + INTERVAL '24 hours')
ON CONFLICT (consumer, stream) DO UPDATE SET in_flight = $3, fencing_token = t.fencing_token + 1, owner = $4,
    lease_expires_at = excluded.lease_expires_at, updated_at = excluded.updated_at, expires_at = excluded.expires_at
WHERE t.high_water = $3 - 1 AND (t.in_flight = 0 OR t.lease_expires_at <= statement_timestamp())
RETURNING fencing_token`
	baselineStreamComplete = `UPDATE dedupd_bench_baseline_streams
SET high_water = in_flight, in_flight = 0, owner = '', lease_expires_at = statement_timestamp(),
    updated_at = statement_timestamp(), expires_at = statement_timestamp() + INTERVAL '24 hours'
WHERE consumer = $1 AND stream = $2 AND in_flight = $3 AND fencing_token = $4`
	baselineStreamDrop = `DROP TABLE IF EXISTS dedupd_bench_baseline_streams`
)

func (b *baseline) claimStream(ctx context.Context, stream string, seq int64) (int64, error) {
	var token int64
	err := b.pool.QueryRow(ctx, b.sql(baselineStreamClaim), b.consumer, stream, seq, "dedupctl-bench").Scan(&token)
	if err != nil {
		return 0, fmt.Errorf("baseline: claim of %s #%d: %w", stream, seq, err)
	}
	return token, nil
}

func (b *baseline) completeStream(ctx context.Context, stream string, seq, token int64) error {
	tag, err := b.pool.Exec(ctx, b.sql(baselineStreamComplete), b.consumer, stream, seq, token)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("baseline: complete of %s #%d changed %d rows", stream, seq, tag.RowsAffected())
	}
	return err
}

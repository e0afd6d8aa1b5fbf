package loadtest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Batch scenarios. An operation is one poll of Config.BatchSize keys, so
// keys/s is ops/s times the batch size (ScenarioReport.KeysPerOp):
//
//   - claim-batch: claim a poll of new keys in one call; all must acquire.
//   - cycle-batch: claim a poll of new keys, then complete them all in one
//     call.
//   - replay-batch: claim a poll of keys completed earlier (a redelivered
//     poll); all must return the stored result.
//
// Their baseline is the raw multi-row statement of the same size, on the
// baseline's table shaped like dedupd's: INSERT ... SELECT FROM unnest ...
// ON CONFLICT DO NOTHING RETURNING for the claims (plus one multi-row SELECT
// for the keys that exist, as a redelivery needs their outcomes), and one
// multi-row fenced UPDATE for the completes.

// batchSide is what a batch scenario needs of either side.
type batchSide interface {
	claimBatch(ctx context.Context, keys []string) ([]claimed, error)
	completeBatch(ctx context.Context, keys []string, tokens []int64) error
}

func (s *scenarios) claimBatchNew(ctx context.Context, i int64) error {
	return s.pollNew(ctx, "claim-batch", i, false)
}

func (s *scenarios) cycleBatch(ctx context.Context, i int64) error {
	return s.pollNew(ctx, "cycle-batch", i, true)
}

// poll names the keys of poll number i, key n of the run named by name(n).
func (s *scenarios) poll(i int64, name func(n int64) string) []string {
	keys := make([]string, s.batchSize)
	for j := range keys {
		keys[j] = name(i*int64(s.batchSize) + int64(j))
	}
	return keys
}

func (s *scenarios) pollNew(ctx context.Context, kind string, i int64, complete bool) error {
	bs := s.side.(batchSide)
	keys := s.poll(i, func(n int64) string { return keyOf(kind, n) })
	got, err := bs.claimBatch(ctx, keys)
	if err != nil {
		return err
	}
	tokens := make([]int64, len(got))
	for j, c := range got {
		if c.outcome != Acquired {
			return fmt.Errorf("batch claim of new key %s: %s, want %s", keys[j], c.outcome, Acquired)
		}
		tokens[j] = c.token
	}
	if complete {
		return bs.completeBatch(ctx, keys, tokens)
	}
	return nil
}

func (s *scenarios) replayBatch(ctx context.Context, i int64) error {
	bs := s.side.(batchSide)
	keys := s.poll(i, func(n int64) string { return keyOf("replay", n%int64(s.replayKeys)) })
	got, err := bs.claimBatch(ctx, keys)
	if err != nil {
		return err
	}
	for j, c := range got {
		if c.outcome != Completed || !bytes.Equal(c.result, s.result) {
			return fmt.Errorf("batch replay of %s: %s with %d result bytes, want %s with %d",
				keys[j], c.outcome, len(c.result), Completed, len(s.result))
		}
	}
	return nil
}

// The dedupd side.

func (s *service) claimBatch(ctx context.Context, keys []string) ([]claimed, error) {
	req := &dedupv1.ClaimBatchRequest{Consumer: s.consumer, Items: make([]*dedupv1.ClaimBatchItem, len(keys))}
	for i, k := range keys {
		req.Items[i] = &dedupv1.ClaimBatchItem{Key: s.keyPrefix + k, Digest: s.digest, Owner: "dedupctl-bench"}
	}
	resp, err := s.client.ClaimBatch(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]claimed, len(keys))
	for i, r := range resp.GetResults() {
		if e := r.GetError(); e != nil {
			return nil, fmt.Errorf("batch claim of %s: %s", keys[i], e.GetMessage())
		}
		out[i] = claimedOf(r.GetClaim())
	}
	return out, nil
}

func (s *service) completeBatch(ctx context.Context, keys []string, tokens []int64) error {
	req := &dedupv1.FinishBatchRequest{Consumer: s.consumer, Items: make([]*dedupv1.FinishBatchItem, len(keys))}
	for i, k := range keys {
		req.Items[i] = &dedupv1.FinishBatchItem{Key: s.keyPrefix + k, FencingToken: tokens[i],
			Outcome: &dedupv1.FinishBatchItem_Result{Result: s.result}}
	}
	resp, err := s.client.FinishBatch(ctx, req)
	if err != nil {
		return err
	}
	for i, r := range resp.GetResults() {
		if e := r.GetError(); e != nil {
			return fmt.Errorf("batch complete of %s: %s", keys[i], e.GetMessage())
		}
	}
	return nil
}

// The baseline side.

const (
	baselineInsertMany = `INSERT INTO dedupd_bench_baseline (consumer, key, state, digest, expires_at)
SELECT $1, k, 'PENDING', $2, statement_timestamp() + INTERVAL '24 hours' FROM unnest($3::TEXT[]) AS k
ON CONFLICT (consumer, key) DO NOTHING
RETURNING key, fencing_token`
	baselineSelectMany = `SELECT b.key, b.state, b.digest, b.result
FROM unnest($2::TEXT[]) AS u (key) JOIN dedupd_bench_baseline AS b ON b.consumer = $1 AND b.key = u.key`
	baselineCompleteMany = `UPDATE dedupd_bench_baseline AS b
SET state = 'COMPLETED', result = $2, expires_at = statement_timestamp() + INTERVAL '24 hours'
FROM unnest($3::TEXT[], $4::INT8[]) AS u (key, token)
WHERE b.consumer = $1 AND b.key = u.key AND b.fencing_token = u.token AND b.state = 'PENDING'`
)

func (b *baseline) claimBatch(ctx context.Context, keys []string) ([]claimed, error) {
	rows, _ := b.pool.Query(ctx, b.sql(baselineInsertMany), b.consumer, b.digest, keys)
	byKey := make(map[string]claimed, len(keys))
	var (
		key   string
		token int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&key, &token}, func() error {
		byKey[key] = claimed{outcome: Acquired, token: token}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(byKey) < len(keys) { // some keys exist: read their outcomes
		var (
			c      claimed
			digest []byte
		)
		rows, _ := b.pool.Query(ctx, b.sql(baselineSelectMany), b.consumer, keys)
		if _, err := pgx.ForEachRow(rows, []any{&key, &c.outcome, &digest, &c.result}, func() error {
			if !bytes.Equal(digest, b.digest) {
				return fmt.Errorf("baseline: key %s has another digest", key)
			}
			if _, mine := byKey[key]; !mine {
				byKey[key] = c
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	out := make([]claimed, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
		if out[i].outcome == "PENDING" || out[i].outcome == "" {
			out[i].outcome = InProgress
		}
	}
	return out, nil
}

func (b *baseline) completeBatch(ctx context.Context, keys []string, tokens []int64) error {
	tag, err := b.pool.Exec(ctx, b.sql(baselineCompleteMany), b.consumer, b.result, keys, tokens)
	if err == nil && tag.RowsAffected() != int64(len(keys)) {
		err = fmt.Errorf("baseline: batch complete changed %d rows of %d", tag.RowsAffected(), len(keys))
	}
	return err
}

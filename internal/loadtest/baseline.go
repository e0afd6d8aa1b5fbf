package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// baseline is what a user would write by hand instead of running dedupd:
// one table shaped like dedupd's (same primary key, an expiry index, a
// digest, a result, a fencing token) and the fewest statements that do each
// step, over a pgx pool with a connection per caller.
//
//   - claim: INSERT ... ON CONFLICT DO NOTHING RETURNING, the single
//     statement dedupd must beat. When it returns no row the key exists,
//     and the worker needs the stored outcome to replay it or back off, so
//     it reads the row with a SELECT by key. A claim of a new key is one
//     statement; a replay, or a claim of a contended key, two.
//   - complete: UPDATE of the row, fenced by its token.
//   - release: DELETE of the row, fenced by its token.
//
// Expiry, takeover of abandoned leases and digest checks are left out, so
// the baseline is lighter than the service: a fair bar, not a flattering one.
type baseline struct {
	pool *pgxpool.Pool
	// statements are this run's texts of the baseline statements.
	statements map[string]string
	consumer   string
	digest     []byte
	result     []byte
	*scenarios
}

const (
	baselineTable = `CREATE TABLE IF NOT EXISTS dedupd_bench_baseline (
    consumer      TEXT        NOT NULL,
    key           TEXT        NOT NULL,
    state         TEXT        NOT NULL,
    digest        BYTEA       NOT NULL,
    fencing_token BIGINT      NOT NULL DEFAULT 1,
    result        BYTEA,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp(),
    expires_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer, key))`
	baselineIndex = `CREATE INDEX IF NOT EXISTS dedupd_bench_baseline_expires_at ON dedupd_bench_baseline (expires_at)`

	baselineInsert = `INSERT INTO dedupd_bench_baseline (consumer, key, state, digest, expires_at)
VALUES ($1, $2, 'PENDING', $3, statement_timestamp() + INTERVAL '24 hours')
ON CONFLICT (consumer, key) DO NOTHING
RETURNING fencing_token`
	baselineSelect   = `SELECT state, digest, result FROM dedupd_bench_baseline WHERE consumer = $1 AND key = $2`
	baselineComplete = `UPDATE dedupd_bench_baseline
SET state = 'COMPLETED', result = $3, expires_at = statement_timestamp() + INTERVAL '24 hours'
WHERE consumer = $1 AND key = $2 AND fencing_token = $4 AND state = 'PENDING'`
	baselineRelease = `DELETE FROM dedupd_bench_baseline WHERE consumer = $1 AND key = $2 AND fencing_token = $3`
	baselineDrop    = `DROP TABLE IF EXISTS dedupd_bench_baseline`
)

// baselineTableName is the table's name in the statements above; each run
// has a table of its own (the name with the run's id), dropped at its end,
// so runs never share rows and none is left behind.
const baselineTableName = "dedupd_bench_baseline"

// baselineStatements are the statements the baseline runs.
var baselineStatements = []string{baselineTable, baselineIndex, baselineInsert, baselineSelect, baselineComplete,
	baselineRelease, baselineDrop, baselineInsertMany, baselineSelectMany, baselineCompleteMany,
	baselineStreamTable, baselineStreamIndex, baselineStreamClaim, baselineStreamComplete, baselineStreamDrop}

// statementsFor returns each statement with the run's table named in it.
func statementsFor(table string) map[string]string {
	out := make(map[string]string, len(baselineStatements))
	for _, q := range baselineStatements {
		out[q] = strings.ReplaceAll(q, baselineTableName, table)
	}
	return out
}

func openBaseline(ctx context.Context, cfg Config, runID string) (*baseline, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.BaselineDatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("loadtest: baseline database URL: %w", err)
	}
	pcfg.MaxConns = int32(cfg.Concurrency)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("loadtest: baseline database: %w", err)
	}
	b := &baseline{pool: pool, statements: statementsFor(baselineTableName + "_" + runID), consumer: cfg.Consumer,
		digest: []byte("dedupctl-bench-digest-0123456789"), result: Result(cfg.ResultBytes)}
	for _, ddl := range []string{baselineTable, baselineIndex, baselineStreamTable, baselineStreamIndex} {
		if _, err := pool.Exec(ctx, b.sql(ddl)); err != nil {
			b.close()
			return nil, fmt.Errorf("loadtest: creating the baseline table: %w", err)
		}
	}
	b.scenarios = newScenarios(b, cfg)
	return b, nil
}

// sql is statement q of this run.
func (b *baseline) sql(q string) string { return b.statements[q] }

// close drops the run's table and closes the pool; it runs on a context of
// its own, so that it also runs after Ctrl-C.
func (b *baseline) close() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, _ = b.pool.Exec(ctx, b.sql(baselineDrop))
	_, _ = b.pool.Exec(ctx, b.sql(baselineStreamDrop))
	b.pool.Close()
}

func (b *baseline) claim(ctx context.Context, key string) (claimed, error) {
	var token int64
	err := b.pool.QueryRow(ctx, b.sql(baselineInsert), b.consumer, key, b.digest).Scan(&token)
	if err == nil {
		return claimed{outcome: Acquired, token: token}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return claimed{}, err
	}
	var (
		c      claimed
		digest []byte
	)
	if err := b.pool.QueryRow(ctx, b.sql(baselineSelect), b.consumer, key).Scan(&c.outcome, &digest, &c.result); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			// Released between the two statements: the worker would retry.
			return claimed{outcome: InProgress}, nil
		}
		return claimed{}, err
	}
	if !bytes.Equal(digest, b.digest) {
		return claimed{}, fmt.Errorf("baseline: key %s has another digest", key)
	}
	if c.outcome == "PENDING" {
		c.outcome = InProgress
	}
	return c, nil
}

func (b *baseline) complete(ctx context.Context, key string, token int64) error {
	tag, err := b.pool.Exec(ctx, b.sql(baselineComplete), b.consumer, key, b.result, token)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("baseline: complete of %s changed %d rows", key, tag.RowsAffected())
	}
	return err
}

func (b *baseline) release(ctx context.Context, key string, token int64) error {
	_, err := b.pool.Exec(ctx, b.sql(baselineRelease), b.consumer, key, token)
	return err
}

// emptyCall: the floor is dedupd's alone (see scenarioTable).
func (b *baseline) emptyCall(context.Context) error {
	return errors.New("baseline: no empty call")
}

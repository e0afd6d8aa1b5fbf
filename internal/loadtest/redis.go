package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// redisBaseline is what a team would run instead of dedupd if it kept its
// keys in Redis: one string per key, taken with SET NX and finished with
// SET XX, over a client with a connection per caller.
//
//   - claim: SET key PENDING PX lease NX GET, one round trip. On a new key
//     it sets the lease and answers nil (acquired); on a key that exists it
//     writes nothing and answers the value, PENDING (in progress) or the
//     stored result (a replay): a GET.
//   - complete: SET key result PX completed-ttl XX.
//   - release: DEL key.
//
// There is no fencing and no digest: SET XX overwrites whatever holds the
// key. The bar is lighter than dedupd, as the PostgreSQL baseline is.
// Redis needs no table: a run's keys carry its consumer and id, and are
// deleted at its end.
type redisBaseline struct {
	client *redis.Client
	prefix string
	result []byte
	keep   bool // Config.KeepRecords: leave the keys
	*scenarios
}

const (
	// redisPending is the value of a key under a lease. A stored result
	// never equals it: the bench's results are runs of 'r'.
	redisPending = "\x00PENDING"
	// The lease and the completed key's lifetime are dedupd's defaults.
	redisLease        = 30 * time.Second
	redisCompletedTTL = 24 * time.Hour
)

// redisKeyPrefix is the prefix of a run's keys on Redis.
func redisKeyPrefix(consumer, runID string) string {
	return consumer + ":" + runID + ":"
}

func openRedis(ctx context.Context, cfg Config, runID string) (*redisBaseline, error) {
	opts, err := redis.ParseURL(cfg.BaselineRedisURL)
	if err != nil {
		return nil, fmt.Errorf("loadtest: baseline Redis URL: %w", err)
	}
	opts.PoolSize, opts.MinIdleConns = cfg.Concurrency, cfg.Concurrency
	// Nothing but the commands above goes over the wire during a run.
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	r := &redisBaseline{client: redis.NewClient(opts), prefix: redisKeyPrefix(cfg.Consumer, runID), result: Result(cfg.ResultBytes),
		keep: cfg.KeepRecords}
	if err := r.client.Ping(ctx).Err(); err != nil {
		_ = r.client.Close()
		return nil, fmt.Errorf("loadtest: baseline Redis: %w", err)
	}
	r.scenarios = newScenarios(r, cfg)
	return r, nil
}

// close deletes the run's keys, unless told to keep them, and closes the
// client, on a context of its own so that it also runs after Ctrl-C.
func (r *redisBaseline) close() {
	defer func() { _ = r.client.Close() }()
	if r.keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	iter := r.client.Scan(ctx, 0, r.prefix+"*", 1000).Iterator()
	var keys []string
	flush := func() {
		if len(keys) > 0 {
			_ = r.client.Unlink(ctx, keys...).Err() // a bench's keys: they expire anyway
			keys = keys[:0]
		}
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			flush()
		}
	}
	flush()
}

// checkPID says, when Redis reports another process id than pid, that its
// CPU figures are of another process; "" when they agree.
func (r *redisBaseline) checkPID(ctx context.Context, pid int) string {
	info, err := r.client.InfoMap(ctx, "server").Result()
	if err != nil {
		return fmt.Sprintf("Redis's process id not checked: %v.", err)
	}
	if reported := info["Server"]["process_id"]; reported != strconv.Itoa(pid) {
		return fmt.Sprintf("Redis reports process_id %s, not --redis-pid %d: its CPU figures are of another process.", reported, pid)
	}
	return ""
}

func (r *redisBaseline) claim(ctx context.Context, key string) (claimed, error) {
	old, err := r.client.Do(ctx, "SET", r.prefix+key, redisPending, "PX", redisLease.Milliseconds(), "NX", "GET").Text()
	switch {
	case errors.Is(err, redis.Nil):
		return claimed{outcome: Acquired}, nil
	case err != nil:
		return claimed{}, err
	case old == redisPending:
		return claimed{outcome: InProgress}, nil
	}
	return claimed{outcome: Completed, result: []byte(old)}, nil
}

func (r *redisBaseline) complete(ctx context.Context, key string, _ int64) error {
	set, err := r.client.Do(ctx, "SET", r.prefix+key, r.result, "PX", redisCompletedTTL.Milliseconds(), "XX").Text()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("redis: complete of %s found no key", key)
	}
	if err == nil && set != "OK" {
		err = fmt.Errorf("redis: complete of %s answered %q", key, set)
	}
	return err
}

func (r *redisBaseline) release(ctx context.Context, key string, _ int64) error {
	return r.client.Del(ctx, r.prefix+key).Err()
}

// emptyCall: the floor is dedupd's alone (see scenarioTable).
func (r *redisBaseline) emptyCall(context.Context) error {
	return errors.New("redis: no empty call")
}

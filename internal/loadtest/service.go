package loadtest

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// service is the dedupd side: every key under a consumer of its own run.
type service struct {
	conn     grpc.ClientConnInterface
	owned    *grpc.ClientConn // the connection Run dialed, closed by close
	client   dedupv1.DedupServiceClient
	health   healthpb.HealthClient
	consumer string
	// keyPrefix is the run's id: runs share the consumer, not keys.
	keyPrefix string
	digest    []byte
	result    []byte
	*scenarios
}

func dialService(cfg Config, runID string) (*service, error) {
	conn := cfg.Conn
	var owned *grpc.ClientConn
	if conn == nil {
		var err error
		owned, err = grpc.NewClient(cfg.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("loadtest: dialing dedupd at %s: %w", cfg.Addr, err)
		}
		conn = owned
	}
	s := &service{conn: conn, owned: owned, client: dedupv1.NewDedupServiceClient(conn), health: healthpb.NewHealthClient(conn),
		consumer: cfg.Consumer, keyPrefix: runID + "/", digest: []byte("dedupctl-bench-digest-0123456789"), result: Result(cfg.ResultBytes)}
	s.scenarios = newScenarios(s, cfg)
	return s, nil
}

// close closes the connection if Run dialed it.
func (s *service) close() {
	if s.owned != nil {
		s.owned.Close()
	}
}

func (s *service) claim(ctx context.Context, key string) (claimed, error) {
	res, err := s.client.Claim(ctx, &dedupv1.ClaimRequest{Consumer: s.consumer, Key: s.keyPrefix + key, Digest: s.digest, Owner: "dedupctl-bench"})
	if err != nil {
		return claimed{}, err
	}
	return claimedOf(res), nil
}

// claimedOf is what a claim's answer tells a worker.
func claimedOf(res *dedupv1.ClaimResponse) claimed {
	c := claimed{token: res.GetFencingToken(), result: res.GetRecord().GetResult()}
	switch res.GetOutcome() {
	case dedupv1.Outcome_OUTCOME_ACQUIRED:
		c.outcome = Acquired
	case dedupv1.Outcome_OUTCOME_IN_PROGRESS:
		c.outcome = InProgress
	case dedupv1.Outcome_OUTCOME_COMPLETED:
		c.outcome = Completed
	case dedupv1.Outcome_OUTCOME_REJECTED:
		c.outcome = Rejected
	default:
		c.outcome = res.GetOutcome().String()
	}
	return c
}

func (s *service) complete(ctx context.Context, key string, token int64) error {
	_, err := s.client.Complete(ctx, &dedupv1.CompleteRequest{Consumer: s.consumer, Key: s.keyPrefix + key, FencingToken: token, Result: s.result})
	return err
}

func (s *service) release(ctx context.Context, key string, token int64) error {
	_, err := s.client.Reject(ctx, &dedupv1.RejectRequest{Consumer: s.consumer, Key: s.keyPrefix + key, FencingToken: token,
		Reason: "BENCH", Retryable: true})
	return err
}

// emptyCall is the standard health Check of the whole server. Every dedupd
// serves it, without a credential and without touching the store, through
// the same interceptors (metrics, logging) as every other unary call, so it
// costs what any call costs before its work. Server reflection, the other
// service that does nothing, is a stream.
func (s *service) emptyCall(ctx context.Context) error {
	_, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

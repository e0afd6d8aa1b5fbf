package metrics

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// refusalReasons are the reasons given before a handler runs; they are
// counted by reason only, since the consumer of such a call is unchecked.
var refusalReasons = map[string]bool{
	rpcerrors.ReasonUnauthenticated:  true,
	rpcerrors.ReasonPermissionDenied: true,
	rpcerrors.ReasonRateLimited:      true,
	rpcerrors.ReasonOverloaded:       true,
}

// UnaryServerInterceptor counts the domain outcomes of each call from its
// answer: claim outcomes, reacquired keys, digest conflicts, lost leases
// and refusals. It goes outside the refusing interceptors to see them.
func (m *Metrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		// On error resp is a typed nil: look at err first.
		if err != nil {
			m.observeError(ctx, info.FullMethod, err)
		} else if claim, ok := resp.(*dedupv1.ClaimResponse); ok {
			m.observeClaim(ctx, claim)
		} else if claim, ok := resp.(*dedupv1.ClaimStreamResponse); ok {
			m.observeStreamClaim(ctx, claim)
		} else {
			m.observeBatch(ctx, info.FullMethod, req, resp)
		}
		return resp, err
	}
}

func (m *Metrics) observeClaim(ctx context.Context, resp *dedupv1.ClaimResponse) {
	name, _ := consumer.FromContext(ctx)
	s := m.consumer(name)
	s.claim(m, resp.GetOutcome()).Inc()
	if resp.GetOutcome() == dedupv1.Outcome_OUTCOME_ACQUIRED && resp.GetRecord().GetAttempts() > 1 {
		s.reacquiredCounter(m).Inc()
	}
}

func (m *Metrics) observeStreamClaim(ctx context.Context, resp *dedupv1.ClaimStreamResponse) {
	name, _ := consumer.FromContext(ctx)
	outcome := strings.ToLower(strings.TrimPrefix(resp.GetOutcome().String(), "STREAM_OUTCOME_"))
	m.streamClaims.WithLabelValues(m.consumerLabel(name), outcome).Inc()
}

func (m *Metrics) observeError(ctx context.Context, method string, err error) {
	m.observeReason(ctx, method, reasonOf(err))
}

// observeReason counts an error, of a call or of one batch item, by its
// ErrorInfo reason.
func (m *Metrics) observeReason(ctx context.Context, method, reason string) {
	if refusalReasons[reason] {
		m.refused.WithLabelValues(reason).Inc()
		return
	}
	name, _ := consumer.FromContext(ctx)
	switch reason {
	case rpcerrors.ReasonDigestMismatch:
		m.digestConflicts.WithLabelValues(m.consumerLabel(name)).Inc()
	case rpcerrors.ReasonSequenceGap, rpcerrors.ReasonStreamModeMismatch, rpcerrors.ReasonParkFull:
		m.streamRefusals.WithLabelValues(m.consumerLabel(name), reason).Inc()
	case rpcerrors.ReasonLeaseLost:
		m.leasesLost.WithLabelValues(m.consumerLabel(name), rpcmethod.Op(method)).Inc()
	}
}

func reasonOf(err error) string { return rpcerrors.Info(status.Convert(err)).GetReason() }

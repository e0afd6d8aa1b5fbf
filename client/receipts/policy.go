package receipts

import (
	"context"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/client"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TTLFromPolicy reads, once, the consumer's retention of completed records
// from dedupd (the effective policy, server defaults filled in): the TTL a
// receipt should have so that it never outlives its record. It needs the
// admin service's permission.
func TTLFromPolicy(ctx context.Context, c *client.Client, consumer string) (time.Duration, error) {
	resp, err := c.Admin().GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: consumer})
	if err != nil {
		return 0, fmt.Errorf("receipts: reading %q's policy: %w", consumer, err)
	}
	ttl := resp.GetEffective().GetCompletedTtl().AsDuration()
	if ttl <= 0 {
		return 0, fmt.Errorf("receipts: %q's policy has no completed retention", consumer)
	}
	return ttl, nil
}

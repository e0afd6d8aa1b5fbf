package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func newStatsCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "stats [CONSUMER]",
		Short: "Count stored records and streams per consumer",
		Long: `Count stored records and streams per consumer: live records by state, PENDING
claims whose lease ran out (LEASE_EXPIRED, the reconciliation queue: see
'dedupctl reconcile'), records past their expiry that the reaper has not
deleted yet (EXPIRED), live streams (STREAMS), and how long the oldest
PENDING claim has been held (OLDEST_PENDING). A consumer that has only
streams is listed too. -o json adds the streams' in-flight and
lease-expired counts and the oldest in-flight stream claim.`,
		Example: `  dedupctl stats
  dedupctl stats payments -o json | jq .consumers[0].pending_lease_expired`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &dedupv1.StatsRequest{}
			if len(argv) == 1 {
				req.Consumer = argv[0]
			}
			admin, err := a.admin()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.Stats(ctx, req)
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			if len(resp.GetConsumers()) == 0 {
				fmt.Fprintln(a.std.out, "no records or streams stored")
				return nil
			}
			now := a.now()
			w := a.table()
			// Ages alone, not timestamps, keep the table narrow; -o json has
			// the times. The stream columns are the JSON's streams_* fields.
			row(w, "CONSUMER", "PENDING", "LEASE_EXPIRED", "COMPLETED", "REJECTED", "RELEASED", "EXPIRED", "OLDEST_PENDING",
				"STREAMS", "STREAMS_IN_FLIGHT", "STREAMS_LEASE_EXPIRED", "OLDEST_STREAM_CLAIM")
			for _, c := range resp.GetConsumers() {
				n := func(v int64) string { return strconv.FormatInt(v, 10) }
				row(w, c.GetConsumer(), n(c.GetPending()), n(c.GetPendingLeaseExpired()), n(c.GetCompleted()),
					n(c.GetRejected()), n(c.GetReleased()), n(c.GetExpired()), formatRelative(c.GetOldestPendingAt(), now),
					n(c.GetStreams()), n(c.GetStreamsInFlight()), n(c.GetStreamsLeaseExpired()), formatRelative(c.GetOldestStreamClaimAt(), now))
			}
			return w.Flush()
		},
	}
}

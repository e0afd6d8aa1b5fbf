package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// reconcileProcedure is what an operator does with each abandoned claim;
// it follows the reconciliation procedure of docs/guarantees.md.
const reconcileProcedure = `These claims were taken but never completed or rejected: the worker stopped
after Claim, so its side effect may or may not have happened. Only your own
system knows. For each key:
  1. Look in your system for the effect of the key (by the key, or by the
     fencing token if your writes record it).
  2. Effect present: claim the key again (you take over with a new token)
     and Complete it with the result, so redeliveries get that result.
  3. Effect absent: claim the key and redo the work, or Reject it (retryable
     to let the next delivery redo it; not retryable to refuse it for good).
  4. To forget the key instead, so the next delivery runs the work again:
       dedupctl records delete %s KEY
Until then the next delivery of a key takes the claim over and runs the work
again, and each record is forgotten at its EXPIRES time.
See docs/guarantees.md, "Reconciliation".
`

func newReconcileCommand(a *app) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "reconcile CONSUMER",
		Short: "List abandoned claims (PENDING, lease expired) and what to do with them",
		Long: `List the reconciliation queue of a consumer: PENDING claims whose lease ran
out before the worker called Complete or Reject. For each: the owner that
claimed it, its attempts, its fencing token, when it was claimed and when
its lease ran out. Then print the procedure to reconcile them.

With -o json the output is one dedup.v1.ListRecordsResponse and no
procedure text.`,
		Example: `  dedupctl reconcile payments
  dedupctl reconcile payments --prefix charge- -o json | jq -r '.records[].key'`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			f.leaseExpired = true
			req, err := f.request(argv[0], a.now())
			if err != nil {
				return err
			}
			resp, err := a.listRecords(cmd.Context(), req, f.limit, f.all)
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			return a.printReconcile(argv[0], resp)
		},
	}
	cmd.Flags().StringVar(&f.prefix, "prefix", "", "only keys starting with this prefix")
	f.registerPaging(cmd, 1000)
	return cmd
}

func (a *app) printReconcile(consumer string, resp *dedupv1.ListRecordsResponse) error {
	if len(resp.GetRecords()) == 0 {
		fmt.Fprintf(a.std.out, "nothing to reconcile: consumer %s has no PENDING claim whose lease ran out\n", consumer)
		return nil
	}
	now := a.now()
	w := a.table()
	row(w, "KEY", "OWNER", "ATTEMPTS", "TOKEN", "CLAIMED", "LEASE_EXPIRED", "EXPIRES")
	for _, r := range resp.GetRecords() {
		row(w, r.GetKey(), orDash(r.GetOwner()), strconv.FormatInt(r.GetAttempts(), 10),
			strconv.FormatInt(r.GetFencingToken(), 10), formatTime(r.GetUpdatedAt(), now),
			formatLease(r.GetLeaseExpiresAt(), now), formatRelative(r.GetExpiresAt(), now))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if resp.GetNextPageToken() != "" {
		fmt.Fprintf(a.std.err, "%d shown; more are waiting: --all lists every one\n", len(resp.GetRecords()))
	}
	fmt.Fprintf(a.std.out, "\n%s to reconcile.\n", countOf(int64(len(resp.GetRecords())), "claim", "claims"))
	fmt.Fprintf(a.std.out, reconcileProcedure, consumer)
	return nil
}

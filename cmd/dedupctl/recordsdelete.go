package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func newRecordsDeleteCommand(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete CONSUMER KEY",
		Short: "Forget one key so that its next claim runs the work again",
		Long: `Delete the record of one key, whatever its state, and show it as it was.
The next Claim of the key acquires it afresh and runs the work again.

On a terminal it shows the record and asks before deleting, unless --yes;
off a terminal it refuses to delete without --yes (exit 2). A PENDING
record whose lease is still live is held by a worker that may still be
running: deleting it lets another claim run the same work at the same
time, and dedupctl warns before it asks.`,
		Example: `  dedupctl records delete payments charge-42
  dedupctl records delete payments charge-42 --yes -o json`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.deleteRecord(cmd.Context(), argv[0], argv[1], yes)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (required off a terminal)")
	return cmd
}

func (a *app) deleteRecord(ctx context.Context, consumer, key string, yes bool) error {
	if !yes && !a.std.interactive {
		return usagef("records delete deletes a record: pass --yes to confirm when not on a terminal")
	}
	admin, err := a.admin()
	if err != nil {
		return err
	}
	before, err := a.lookupBeforeDelete(ctx, consumer, key)
	if err != nil && !(yes && status.Code(err) == codes.NotFound) {
		return err
	}
	if before != nil && liveLease(before) != nil && liveLease(before).AsTime().After(a.now()) {
		fmt.Fprintf(a.std.err, "warning: %q is PENDING and its lease (owner %s) runs until %s: its worker may still be running, "+
			"and deleting the record lets another claim run the same work at the same time\n",
			escapeCell(key), escapeCell(orDash(before.GetOwner())), formatTime(before.GetLeaseExpiresAt(), a.now()))
	}
	if !yes {
		if before != nil && !a.jsonOutput() {
			if err := a.printRecord(before); err != nil {
				return err
			}
		}
		ok, err := a.confirm(ctx, fmt.Sprintf("Delete the record of %q (consumer %s)?", escapeCell(key), escapeCell(consumer)))
		if err != nil {
			return err
		}
		if !ok {
			return errAborted
		}
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	resp, err := admin.DeleteRecord(cctx, &dedupv1.DeleteRecordRequest{Consumer: consumer, Key: key})
	if err != nil {
		return err
	}
	resp.Record = asItWas(resp.GetRecord(), before)
	if a.jsonOutput() {
		return a.printJSON(resp)
	}
	fmt.Fprintln(a.std.out, "deleted:")
	return a.printRecord(resp.GetRecord())
}

// lookupBeforeDelete reads the record about to be deleted, for the
// question, the warning and the printout. A token that may delete but not
// read the consumer's records (an admin token that covers no consumer)
// gets nil: the delete then goes on without them. With --yes a missing
// record is left to the delete to report, since it may also be refused.
func (a *app) lookupBeforeDelete(ctx context.Context, consumer, key string) (*dedupv1.Record, error) {
	records, err := a.records()
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	resp, err := records.Lookup(cctx, &dedupv1.LookupRequest{Consumer: consumer, Key: key})
	if status.Code(err) == codes.PermissionDenied {
		return nil, nil //nolint:nilnil // no record to show is not an error
	}
	return resp.GetRecord(), err
}

// asItWas is the deleted record as it was stored: the store reports a
// deleted record's expiry as the moment of the delete, so the expiry is
// taken from the record read before, when that is the same version
// (state, fencing token and update time); otherwise there is none to show.
func asItWas(deleted, before *dedupv1.Record) *dedupv1.Record {
	out := proto.CloneOf(deleted)
	out.ExpiresAt = nil
	if before != nil && before.GetState() == deleted.GetState() && before.GetFencingToken() == deleted.GetFencingToken() &&
		before.GetUpdatedAt().AsTime().Equal(deleted.GetUpdatedAt().AsTime()) {
		out.ExpiresAt = before.GetExpiresAt()
	}
	return out
}

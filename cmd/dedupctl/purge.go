package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dedupd/dedupd/internal/duration"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

type purgeFlags struct {
	states    []string
	olderThan time.Duration
	expired   bool
	dryRun    bool
	yes       bool
	batchSize int32
}

func newPurgeCommand(a *app) *cobra.Command {
	var f purgeFlags
	cmd := &cobra.Command{
		Use:   "purge [CONSUMER]",
		Short: "Delete records in bulk, by state and age, or everything expired",
		Long: `Delete a consumer's records by state and/or age, or (with --expired) every
record already past its expiry, of one consumer or of all. The server
deletes in batches, each its own transaction, and streams the running count.

Progress: on a terminal one progress line is redrawn on stderr, and erased
at the end; otherwise stderr gets a plain line "deleted N so far" per batch.
The total goes to stdout only ("deleted N records"); with -o json stdout gets exactly one
dedup.v1.PurgeResponse object, {"deleted": N, "done": true}.

Confirmation: on a terminal dedupctl first counts what matches and asks
before deleting, unless --yes; Ctrl-C at the question deletes nothing and
exits with 130. Off a terminal (a script, a pipe) it refuses
to delete without --yes (exit 2), so nothing is purged by accident.

Ctrl-C stops the purge between batches: what was deleted stays deleted,
nothing else is touched. dedupctl then reports how many records it saw
deleted (at least that many were) and exits with 130; with -o json the
object has "done": false.

--timeout bounds a purge only when given explicitly; by default a purge
runs until it is done.`,
		Example: `  dedupctl purge payments --state completed --older-than 30d --dry-run
  dedupctl purge payments --state pending,released --older-than 24h
  dedupctl purge --expired --yes
  dedupctl purge payments --yes -o json | jq .deleted`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			consumer := ""
			if len(argv) == 1 {
				consumer = argv[0]
			}
			return a.purge(cmd, consumer, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only these states: pending, completed, rejected, released (comma-separated)")
	fl.Var(durationFlag{&f.olderThan}, "older-than", "only records last changed longer ago than this, e.g. 24h or 30d")
	fl.BoolVar(&f.expired, "expired", false, "only records past their expiry (every consumer when none is named)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "count what would be deleted; delete nothing")
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation (required off a terminal)")
	fl.Int32Var(&f.batchSize, "batch-size", 0, "records per transaction; the server default (1000) when 0, at most 10000")
	return cmd
}

func (f *purgeFlags) request(consumer string, now time.Time) (*dedupv1.PurgeRequest, error) {
	if consumer == "" && !f.expired {
		return nil, usagef("name a CONSUMER, or use --expired to purge expired records of every consumer")
	}
	states, err := parseStates(f.states)
	if err != nil {
		return nil, usagef("--state: %v", err)
	}
	if f.batchSize < 0 || f.batchSize > 10000 {
		return nil, usagef("--batch-size must be between 1 and 10000")
	}
	req := &dedupv1.PurgeRequest{Consumer: consumer, States: states, ExpiredOnly: f.expired, BatchSize: f.batchSize}
	if f.olderThan > 0 {
		req.UpdatedBefore = timestamppb.New(now.Add(-f.olderThan))
	}
	return req, nil
}

// describePurge says in words which records a purge selects.
func describePurge(req *dedupv1.PurgeRequest, olderThan time.Duration) string {
	parts := []string{"of every consumer"}
	if req.GetConsumer() != "" {
		parts[0] = "of consumer " + req.GetConsumer()
	}
	if len(req.GetStates()) > 0 {
		names := make([]string, len(req.GetStates()))
		for i, s := range req.GetStates() {
			names[i] = stateName(s)
		}
		parts = append(parts, "in state "+strings.Join(names, " or "))
	}
	if olderThan > 0 {
		parts = append(parts, "unchanged for "+duration.Format(olderThan))
	}
	if req.GetExpiredOnly() {
		parts = append(parts, "past their expiry")
	}
	return strings.Join(parts, ", ")
}

func (a *app) purge(cmd *cobra.Command, consumer string, f *purgeFlags) error {
	req, err := f.request(consumer, a.now())
	if err != nil {
		return err
	}
	if !f.dryRun && !f.yes && !a.std.interactive {
		return usagef("purge deletes records: pass --yes to confirm when not on a terminal (or --dry-run to count)")
	}
	admin, err := a.admin()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if cmd.Flags().Changed("timeout") {
		var cancel context.CancelFunc
		ctx, cancel = a.callContext(ctx)
		defer cancel()
	}
	var total int64 = -1 // unknown
	if f.dryRun || !f.yes {
		if total, err = a.purgeCount(ctx, admin, req); err != nil {
			return err
		}
	}
	what := describePurge(req, f.olderThan)
	if f.dryRun {
		if a.jsonOutput() {
			return a.printJSON(&dedupv1.PurgeResponse{Deleted: total, Done: true})
		}
		fmt.Fprintf(a.std.out, "%s match (%s); dry run: nothing deleted\n", recordCount(total), what)
		return nil
	}
	if !f.yes {
		if total == 0 {
			return a.purgeDone(0)
		}
		ok, err := a.confirm(cmd.Context(), fmt.Sprintf("Delete %s (%s)?", recordCount(total), what))
		if err != nil {
			return err
		}
		if !ok {
			return errAborted
		}
	}
	return a.purgeStream(ctx, admin, req, total)
}

// purgeCount asks the server how many records a purge would delete.
func (a *app) purgeCount(ctx context.Context, admin dedupv1.AdminServiceClient, req *dedupv1.PurgeRequest) (int64, error) {
	dry := proto.CloneOf(req)
	dry.DryRun = true
	stream, err := admin.Purge(ctx, dry)
	if err != nil {
		return 0, err
	}
	var count int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return count, nil
		}
		if err != nil {
			return 0, err
		}
		count = msg.GetDeleted()
	}
}

// purgeStream runs the purge and reports its progress until the server
// says done, or the user interrupts it.
func (a *app) purgeStream(ctx context.Context, admin dedupv1.AdminServiceClient, req *dedupv1.PurgeRequest, total int64) error {
	progress := a.newProgress(total)
	stream, err := admin.Purge(ctx, req)
	if err != nil {
		return err
	}
	var deleted int64
	for {
		msg, err := stream.Recv()
		if err == nil {
			deleted = msg.GetDeleted()
			if msg.GetDone() {
				// The total goes to stdout only, not as progress too.
				progress.finish()
				return a.purgeDone(deleted)
			}
			progress.update(deleted)
			// Messages already received are delivered after a cancel;
			// stop at the first one seen after it.
			if ctx.Err() == nil {
				continue
			}
		}
		progress.finish()
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return a.purgeInterrupted(deleted)
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("the server ended the purge without saying it was done; at least %s deleted", recordCount(deleted))
		}
		return fmt.Errorf("purge stopped after deleting at least %s: %w", recordCount(deleted), err)
	}
}

func (a *app) purgeDone(deleted int64) error {
	if a.jsonOutput() {
		return a.printJSON(&dedupv1.PurgeResponse{Deleted: deleted, Done: true})
	}
	fmt.Fprintf(a.std.out, "deleted %s\n", recordCount(deleted))
	return nil
}

func (a *app) purgeInterrupted(deleted int64) error {
	if a.jsonOutput() {
		if err := a.printJSON(&dedupv1.PurgeResponse{Deleted: deleted}); err != nil {
			return err
		}
	}
	return interruptedError{fmt.Sprintf(
		"interrupted: at least %s deleted before the purge stopped; they stay deleted, nothing else was touched",
		countOf(deleted, "record was", "records were"))}
}

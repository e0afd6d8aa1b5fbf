package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Park mode's commands: what a stream holds parked, and skipping its gap.

func newStreamsParkedCommand(a *app) *cobra.Command {
	var (
		all      bool
		limit    int
		pageSize int32
	)
	cmd := &cobra.Command{
		Use:   "parked CONSUMER STREAM",
		Short: "Show a stream's parked events: what waits, and on which missing sequence",
		Long: `Show the events a stream holds parked (claimed with park before their turn),
in sequence order, without their payloads: first the summary (how many, the
lowest and highest, how long the oldest has waited, whether the sequence
after the mark is missing), then one row per event. The event marked in
flight has been handed out and is being processed.`,
		Example: `  dedupctl streams parked orders order-42
  dedupctl streams parked orders order-42 --all -o json | jq '.events[].sequence'`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			client, err := a.streams()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			got, err := client.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: argv[0], Stream: argv[1]})
			cancel()
			if err != nil {
				return err
			}
			req := &dedupv1.ListParkedRequest{Consumer: argv[0], Stream: argv[1], PageSize: pageSize}
			out := &dedupv1.ListParkedResponse{}
			if got.GetParked() != nil { // a stream with nothing parked has no events to list
				out.Events, out.NextPageToken, err = collectPages(cmd.Context(), a, all, limit,
					func(ctx context.Context, token string) ([]*dedupv1.ParkedEvent, string, error) {
						req.PageToken = token
						page, err := client.ListParked(ctx, req)
						return page.GetEvents(), page.GetNextPageToken(), err
					})
				if err != nil {
					return err
				}
			}
			if a.jsonOutput() {
				return a.printJSON(out) // the summary is streams get's .parked
			}
			return a.printParked(got, out)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&limit, "limit", 100, "most events to show")
	fl.BoolVar(&all, "all", false, "show every parked event, page after page (ignores --limit)")
	fl.Int32Var(&pageSize, "page-size", 0, "events per call; the server default (100) when 0, at most 1000")
	return cmd
}

func (a *app) printParked(got *dedupv1.GetStreamResponse, list *dedupv1.ListParkedResponse) error {
	p := got.GetParked()
	if p == nil {
		fmt.Fprintf(a.std.out, "nothing parked (high_water %d)\n", got.GetStream().GetHighWater())
		return nil
	}
	now := a.now()
	w := a.table()
	waiting := "no: the next event is parked"
	if p.GetGapOpen() {
		waiting = fmt.Sprintf("yes: on %d", got.GetStream().GetHighWater()+1)
	}
	for _, l := range [][2]string{
		{"high_water", strconv.FormatInt(got.GetStream().GetHighWater(), 10)},
		{"parked", fmt.Sprintf("%d (%d bytes)", p.GetCount(), p.GetBytes())},
		{"lowest", strconv.FormatInt(p.GetLowest(), 10)},
		{"highest", strconv.FormatInt(p.GetHighest(), 10)},
		{"oldest_parked_at", formatTime(p.GetOldestParkedAt(), now)},
		{"gap_open", waiting},
	} {
		row(w, l[0], l[1])
	}
	row(w, "", "")
	row(w, "SEQUENCE", "BYTES", "PARKED", "IN_FLIGHT")
	for _, ev := range list.GetEvents() {
		inFlight := "-"
		if ev.GetInFlight() {
			inFlight = "yes"
		}
		row(w, strconv.FormatInt(ev.GetSequence(), 10), strconv.FormatInt(ev.GetPayloadBytes(), 10),
			formatRelative(ev.GetParkedAt(), now), inFlight)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if list.GetNextPageToken() != "" {
		fmt.Fprintf(a.std.err, "%d shown; more are parked: --all lists every one\n", len(list.GetEvents()))
	}
	return nil
}

func newStreamsSkipCommand(a *app) *cobra.Command {
	var dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "skip CONSUMER STREAM",
		Short: "Give up on the missing events before a stream's lowest parked one",
		Long: `Skip a stream's gap: the mark moves to the lowest parked sequence - 1, the
skipped range is recorded on the stream, and the parked events become ready
in order (a ClaimParked worker, or the next claim, takes them). The skipped
events are never processed: if one is delivered later it is a duplicate. A
claim in flight is dropped and its holder gets LEASE_LOST. With --dry-run
nothing is written and the range that would be skipped is shown.`,
		Example: `  dedupctl streams skip orders order-42 --dry-run
  dedupctl streams skip orders order-42 --yes`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !dryRun && !yes && !a.std.interactive {
				return usagef("skip gives up events for good: pass --yes when not on a terminal (or --dry-run)")
			}
			conn, err := a.dial()
			if err != nil {
				return err
			}
			admin := dedupv1.NewStreamAdminServiceClient(conn)
			req := &dedupv1.SkipGapRequest{Consumer: argv[0], Stream: argv[1], DryRun: true}
			if !dryRun && !yes {
				ctx, cancel := a.callContext(cmd.Context())
				preview, err := admin.SkipGap(ctx, req)
				cancel()
				if err != nil {
					return err
				}
				r := preview.GetSkipped()
				ok, err := a.confirm(cmd.Context(), fmt.Sprintf("Skip sequences %d to %d of stream %q of %s for good?",
					r.GetFromSequence(), r.GetToSequence(), req.GetStream(), req.GetConsumer()))
				if err != nil {
					return err
				}
				if !ok {
					return errAborted
				}
			}
			req.DryRun = dryRun
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.SkipGap(ctx, req)
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			r := resp.GetSkipped()
			verb := "skipped"
			if dryRun {
				verb = "dry run: nothing changed; would skip"
			}
			fmt.Fprintf(a.std.out, "%s sequences %d to %d\n", verb, r.GetFromSequence(), r.GetToSequence())
			return a.printStream(resp.GetStream())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "show the range, change nothing")
	fl.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (required off a terminal)")
	return cmd
}

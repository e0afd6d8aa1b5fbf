package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func newStreamsCommand(a *app) *cobra.Command {
	return group("streams", "List, show and reset ordered streams; show and skip what they hold parked",
		`  dedupctl streams list orders --lease-expired
  dedupctl streams get orders order-42
  dedupctl streams reset orders order-42 --high-water 3 --dry-run
  dedupctl streams parked orders order-42
  dedupctl streams skip orders order-42 --dry-run`,
		newStreamsListCommand(a), newStreamsGetCommand(a), newStreamsResetCommand(a),
		newStreamsParkedCommand(a), newStreamsSkipCommand(a))
}

func (a *app) streams() (dedupv1.StreamServiceClient, error) {
	conn, err := a.dial()
	if err != nil {
		return nil, err
	}
	return dedupv1.NewStreamServiceClient(conn), nil
}

func newStreamsGetCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get CONSUMER STREAM",
		Short: "Show one stream: its high-water mark and the claim in flight",
		Long: `Show one stream: its mode, high-water mark (the last sequence processed),
how that event ended (and its rejection if it was poison), and the claim in
flight with its owner and lease.`,
		Example: `  dedupctl streams get orders order-42
  dedupctl streams get orders order-42 -o json | jq .stream.highWater`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			client, err := a.streams()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := client.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: argv[0], Stream: argv[1]})
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			return a.printStream(resp.GetStream())
		},
	}
}

// printStream writes one stream as a two-column table.
func (a *app) printStream(s *dedupv1.Stream) error {
	now := a.now()
	w := a.table()
	// The lease is that of the claim in flight; with none there is none.
	inFlight, lease := "-", "-"
	if s.GetInFlight() != 0 {
		inFlight, lease = strconv.FormatInt(s.GetInFlight(), 10), formatTime(s.GetLeaseExpiresAt(), now)
	}
	for _, l := range [][2]string{
		{"consumer", s.GetConsumer()},
		{"stream", s.GetStream()},
		{"mode", modeName(s.GetMode())},
		{"high_water", strconv.FormatInt(s.GetHighWater(), 10)},
		{"last_outcome", outcomeName(s.GetLastOutcome())},
		{"last_rejection", formatRejection(s.GetLastRejection())},
		{"rejected", strconv.FormatInt(s.GetRejected(), 10)},
		{"in_flight", inFlight},
		{"fencing_token", strconv.FormatInt(s.GetFencingToken(), 10)},
		{"owner", orDash(s.GetOwner())},
		{"lease_expires_at", lease},
		{"updated_at", formatTime(s.GetUpdatedAt(), now)},
		{"expires_at", formatTime(s.GetExpiresAt(), now)},
	} {
		row(w, l[0], l[1])
	}
	return w.Flush()
}

func modeName(m dedupv1.StreamMode) string {
	return strings.ToLower(strings.TrimPrefix(m.String(), "STREAM_MODE_"))
}

func newStreamsListCommand(a *app) *cobra.Command {
	var (
		leaseExpired, all bool
		limit             int
		pageSize          int32
	)
	cmd := &cobra.Command{
		Use:   "list CONSUMER",
		Short: "List a consumer's live streams in stream order",
		Long: `List a consumer's live streams. With --lease-expired only streams whose claim
in flight ran out of lease: the reconciliation queue, events whose effect may
or may not have happened.`,
		Example: `  dedupctl streams list orders
  dedupctl streams list orders --lease-expired --all -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			client, err := a.streams()
			if err != nil {
				return err
			}
			req := &dedupv1.ListStreamsRequest{Consumer: argv[0], LeaseExpired: leaseExpired, PageSize: pageSize}
			streams, next, err := collectPages(cmd.Context(), a, all, limit,
				func(ctx context.Context, token string) ([]*dedupv1.Stream, string, error) {
					req.PageToken = token
					page, err := client.ListStreams(ctx, req)
					return page.GetStreams(), page.GetNextPageToken(), err
				})
			if err != nil {
				return err
			}
			out := &dedupv1.ListStreamsResponse{Streams: streams, NextPageToken: next}
			if a.jsonOutput() {
				return a.printJSON(out)
			}
			return a.printStreamList(out)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&leaseExpired, "lease-expired", false, "only streams whose claim in flight ran out of lease")
	fl.IntVar(&limit, "limit", 100, "most streams to show")
	fl.BoolVar(&all, "all", false, "show every stream, page after page (ignores --limit)")
	fl.Int32Var(&pageSize, "page-size", 0, "streams per call; the server default (100) when 0, at most 1000")
	return cmd
}

func (a *app) printStreamList(resp *dedupv1.ListStreamsResponse) error {
	if len(resp.GetStreams()) == 0 {
		fmt.Fprintln(a.std.out, "no streams match")
		return nil
	}
	now := a.now()
	w := a.table()
	row(w, "STREAM", "MODE", "HIGH_WATER", "IN_FLIGHT", "TOKEN", "OWNER", "LEASE", "EXPIRES")
	for _, s := range resp.GetStreams() {
		inFlight, lease := "-", "-"
		if s.GetInFlight() != 0 {
			inFlight, lease = strconv.FormatInt(s.GetInFlight(), 10), formatLease(s.GetLeaseExpiresAt(), now)
		}
		row(w, s.GetStream(), modeName(s.GetMode()), strconv.FormatInt(s.GetHighWater(), 10), inFlight,
			strconv.FormatInt(s.GetFencingToken(), 10), orDash(s.GetOwner()), lease, formatRelative(s.GetExpiresAt(), now))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if resp.GetNextPageToken() != "" {
		fmt.Fprintf(a.std.err, "%d shown; more match: --all lists every one\n", len(resp.GetStreams()))
	}
	return nil
}

func newStreamsResetCommand(a *app) *cobra.Command {
	var (
		highWater   int64
		dryRun, yes bool
	)
	cmd := &cobra.Command{
		Use:   "reset CONSUMER STREAM --high-water N",
		Short: "Set a stream's high-water mark, back or forward",
		Long: `Set a stream's high-water mark: the events above it are processed again
(moving it back) or skipped (moving it forward). A claim in flight is dropped
and its holder gets LEASE_LOST. A stream with no record is created. With
--dry-run nothing is written and the stream as it would be is shown.`,
		Example: `  dedupctl streams reset orders order-42 --high-water 2 --dry-run
  dedupctl streams reset orders order-42 --high-water 0 --yes`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !cmd.Flags().Changed("high-water") {
				return usagef("--high-water is required")
			}
			if !dryRun && !yes && !a.std.interactive {
				return usagef("reset changes what is processed again: pass --yes when not on a terminal (or --dry-run)")
			}
			conn, err := a.dial()
			if err != nil {
				return err
			}
			admin := dedupv1.NewStreamAdminServiceClient(conn)
			req := &dedupv1.ResetStreamRequest{Consumer: argv[0], Stream: argv[1], HighWater: highWater, DryRun: true}
			if !dryRun && !yes {
				if err := a.confirmReset(cmd.Context(), admin, req); err != nil {
					return err
				}
			}
			req.DryRun = dryRun
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.ResetStream(ctx, req)
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			if dryRun {
				fmt.Fprintln(a.std.out, "dry run: nothing changed; the stream would be:")
			}
			return a.printStream(resp.GetStream())
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&highWater, "high-water", 0, "the new mark: the last sequence to count as processed (0: expect the first again)")
	fl.BoolVar(&dryRun, "dry-run", false, "show the result, change nothing")
	fl.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (required off a terminal)")
	return cmd
}

// confirmReset shows what the reset would do and asks.
func (a *app) confirmReset(ctx context.Context, admin dedupv1.StreamAdminServiceClient, req *dedupv1.ResetStreamRequest) error {
	cctx, cancel := a.callContext(ctx)
	preview, err := admin.ResetStream(cctx, req)
	cancel()
	if err != nil {
		return err
	}
	from := "no stream"
	if p := preview.GetPrevious(); p != nil {
		from = fmt.Sprintf("high-water %d", p.GetHighWater())
		if p.GetInFlight() != 0 {
			from += fmt.Sprintf(", %d in flight", p.GetInFlight())
		}
	}
	ok, err := a.confirm(ctx, fmt.Sprintf("Reset stream %q of %s from %s to high-water %d?",
		req.GetStream(), req.GetConsumer(), from, req.GetHighWater()))
	if err != nil {
		return err
	}
	if !ok {
		return errAborted
	}
	return nil
}

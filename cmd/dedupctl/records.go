package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dedupd/dedupd/internal/resultview"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func newRecordsCommand(a *app) *cobra.Command {
	return group("records", "List, show and delete stored records",
		`  dedupctl records list payments --state pending,completed --updated-after 2h
  dedupctl records get payments charge-42
  dedupctl records delete payments charge-42`,
		newRecordsGetCommand(a), newRecordsListCommand(a), newRecordsDeleteCommand(a))
}

func newRecordsGetCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get CONSUMER KEY",
		Short: "Show everything stored about one key",
		Long: `Show the stored record of one key: state, digest, fencing token, attempts,
owner, times, and the stored result or rejection. A result is shown as
text, as JSON (pretty-printed below the table), as the HTTP response the
gateway stored (status, headers and body, below the table), or in hex; -o
json keeps the raw bytes (base64). The digest is shown in hex.`,
		Example: `  dedupctl records get payments charge-42
  dedupctl records get payments charge-42 -o json | jq -r .record.result | base64 -d`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			client, err := a.records()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := client.Lookup(ctx, &dedupv1.LookupRequest{Consumer: argv[0], Key: argv[1]})
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			return a.printRecord(resp.GetRecord())
		},
	}
}

// printRecord writes one record as a two-column table.
func (a *app) printRecord(r *dedupv1.Record) error {
	now := a.now()
	w := a.table()
	lines := [][2]string{
		{"consumer", r.GetConsumer()},
		{"key", r.GetKey()},
		{"state", stateName(r.GetState())},
		{"digest", formatDigest(r.GetDigest())},
		{"fencing_token", strconv.FormatInt(r.GetFencingToken(), 10)},
		{"attempts", strconv.FormatInt(r.GetAttempts(), 10)},
		{"owner", orDash(r.GetOwner())},
		{"created_at", formatTime(r.GetCreatedAt(), now)},
		{"updated_at", formatTime(r.GetUpdatedAt(), now)},
		{"lease_expires_at", formatTime(liveLease(r), now)},
		{"expires_at", formatTime(r.GetExpiresAt(), now)},
		{"result", formatBytes(r.GetResult())},
		{"rejection", formatRejection(r.GetRejection())},
	}
	for _, l := range lines {
		row(w, l[0], l[1])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// A response or a JSON document reads better whole, on its lines.
	if v := resultview.Decode(r.GetResult()); v.Kind == resultview.HTTP || v.Kind == resultview.JSON && strings.ContainsAny(v.Detail(), "\n") {
		_, err := fmt.Fprintf(a.std.out, "\nstored result, as %s:\n%s\n", v.Kind, indent(v.Detail(), "  "))
		return err
	}
	return nil
}

// indent puts prefix before each line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// liveLease is the end of a record's lease while it is PENDING. A
// finished record keeps the time its last lease would have run out, but
// nothing holds it any more: there is no lease to show.
func liveLease(r *dedupv1.Record) *timestamppb.Timestamp {
	if r.GetState() != dedupv1.State_STATE_PENDING {
		return nil
	}
	return r.GetLeaseExpiresAt()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listFlags are the filters and paging of records list and reconcile.
type listFlags struct {
	states                                                   []string
	prefix                                                   string
	createdAfter, createdBefore, updatedAfter, updatedBefore string
	leaseExpired                                             bool
	limit                                                    int
	all                                                      bool
	pageSize                                                 int32
}

func (f *listFlags) registerPaging(cmd *cobra.Command, defaultLimit int) {
	fl := cmd.Flags()
	fl.IntVar(&f.limit, "limit", defaultLimit, "most records to show")
	fl.BoolVar(&f.all, "all", false, "show every matching record, page after page (ignores --limit)")
	fl.Int32Var(&f.pageSize, "page-size", 0, "records per call; the server default (100) when 0, at most 1000")
}

func newRecordsListCommand(a *app) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list CONSUMER",
		Short: "List a consumer's live records in key order",
		Long: `List a consumer's live records in key order, with filters. Expired records
are never listed. Times take RFC 3339 (2026-01-02T15:04:05Z) or an age
counted back from now (90m, 2h, 7d). After bounds are inclusive, before
bounds exclusive.

With -o json the output is one dedup.v1.ListRecordsResponse holding every
record shown; its next_page_token is empty when nothing more matches.`,
		Example: `  dedupctl records list payments
  dedupctl records list payments --state pending,completed --prefix charge- --limit 20
  dedupctl records list payments --updated-after 2h --all -o json
  dedupctl records list payments --lease-expired`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
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
			return a.printRecordList(resp)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only these states: pending, completed, rejected, released (comma-separated)")
	fl.StringVar(&f.prefix, "prefix", "", "only keys starting with this prefix")
	fl.StringVar(&f.createdAfter, "created-after", "", "only records created at or after this time")
	fl.StringVar(&f.createdBefore, "created-before", "", "only records created before this time")
	fl.StringVar(&f.updatedAfter, "updated-after", "", "only records changed at or after this time")
	fl.StringVar(&f.updatedBefore, "updated-before", "", "only records changed before this time")
	fl.BoolVar(&f.leaseExpired, "lease-expired", false, "only PENDING claims whose lease ran out (the reconciliation queue)")
	f.registerPaging(cmd, 100)
	return cmd
}

// request is the ListRecords request the flags ask for.
func (f *listFlags) request(consumer string, now time.Time) (*dedupv1.ListRecordsRequest, error) {
	states, err := parseStates(f.states)
	if err != nil {
		return nil, usagef("--state: %v", err)
	}
	req := &dedupv1.ListRecordsRequest{Consumer: consumer, States: states, KeyPrefix: f.prefix, LeaseExpired: f.leaseExpired}
	bounds := []struct {
		flag, value string
		dst         **timestamppb.Timestamp
	}{
		{"--created-after", f.createdAfter, &req.CreatedAfter},
		{"--created-before", f.createdBefore, &req.CreatedBefore},
		{"--updated-after", f.updatedAfter, &req.UpdatedAfter},
		{"--updated-before", f.updatedBefore, &req.UpdatedBefore},
	}
	for _, b := range bounds {
		if b.value == "" {
			continue
		}
		t, err := parseTimeBound(b.value, now)
		if err != nil {
			return nil, usagef("%s: %v", b.flag, err)
		}
		*b.dst = timestamppb.New(t)
	}
	if !f.all && f.limit <= 0 {
		return nil, usagef("--limit must be positive (or use --all)")
	}
	if f.pageSize < 0 || f.pageSize > 1000 {
		return nil, usagef("--page-size must be between 1 and 1000")
	}
	req.PageSize = f.pageSize
	return req, nil
}

// listRecords pages through ListRecords until limit records (or, with all,
// every one) are read. Pages never ask for more than is still wanted, so
// the next_page_token of the result continues exactly after it.
func (a *app) listRecords(ctx context.Context, req *dedupv1.ListRecordsRequest, limit int, all bool) (*dedupv1.ListRecordsResponse, error) {
	client, err := a.records()
	if err != nil {
		return nil, err
	}
	pageSize := req.GetPageSize()
	out := &dedupv1.ListRecordsResponse{}
	for {
		if !all {
			remaining := int32(min(limit-len(out.GetRecords()), 1000))
			if remaining <= 0 {
				return out, nil
			}
			req.PageSize = remaining
			if pageSize > 0 {
				req.PageSize = min(remaining, pageSize)
			}
		}
		callCtx, cancel := a.callContext(ctx)
		page, err := client.ListRecords(callCtx, req)
		cancel()
		if err != nil {
			return nil, err
		}
		out.Records = append(out.Records, page.GetRecords()...)
		out.NextPageToken = page.GetNextPageToken()
		if out.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = out.GetNextPageToken()
	}
}

// printRecordList writes records as a table, one per line.
func (a *app) printRecordList(resp *dedupv1.ListRecordsResponse) error {
	if len(resp.GetRecords()) == 0 {
		fmt.Fprintln(a.std.out, "no records match")
		return nil
	}
	now := a.now()
	w := a.table()
	row(w, "KEY", "STATE", "TOKEN", "ATTEMPTS", "OWNER", "UPDATED", "EXPIRES", "RESULT")
	for _, r := range resp.GetRecords() {
		outcome := formatBytes(r.GetResult())
		if r.GetRejection() != nil {
			outcome = formatRejection(r.GetRejection())
		}
		row(w, r.GetKey(), stateName(r.GetState()), strconv.FormatInt(r.GetFencingToken(), 10),
			strconv.FormatInt(r.GetAttempts(), 10), orDash(r.GetOwner()), formatTime(r.GetUpdatedAt(), now),
			formatRelative(r.GetExpiresAt(), now), truncate(outcome, 40))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if resp.GetNextPageToken() != "" {
		fmt.Fprintf(a.std.err, "%d shown; more match: --all lists every one\n", len(resp.GetRecords()))
	}
	return nil
}

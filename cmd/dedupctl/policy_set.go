package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/duration"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// policySetFlags are the fields policy set may change and how it asks.
type policySetFlags struct {
	completed, rejected, released, defaultLease, maxLease time.Duration
	maxResult                                             int64
	requireDigest                                         bool
	replace, dryRun, yes                                  bool
}

func newPolicySetCommand(a *app) *cobra.Command {
	var f policySetFlags
	cmd := &cobra.Command{
		Use:   "set CONSUMER",
		Short: "Create or change a consumer's retention and lease policy",
		Long: `Create or change a consumer's policy. Only the fields given change; the
others keep their stored value (with --replace they go back to the server
default). A value of 0 means "use the server default". Durations take Go
syntax plus days: 30s, 1h30m, 72h, 7d. Sizes: 65536, 64KiB, 1MiB.

Records already stored keep the expiry they were given; the new TTLs apply
to records that finish or are released from now on. Nothing is deleted on
the spot: shortening a TTL takes effect as records come due.

--dry-run shows what would change (before and after, and how many stored
and pending records the consumer has) and changes nothing. Without it the
same summary is printed; when the change shortens completed_ttl, dedupctl
warns, and on a terminal asks for confirmation unless --yes. Off a terminal
(a script) it applies the change and prints the warning on stderr.`,
		Example: `  dedupctl policy set payments --completed-ttl 7d --rejected-ttl 7d --dry-run
  dedupctl policy set payments --completed-ttl 72h --yes
  dedupctl policy set webhooks --max-result-bytes 1MiB --require-digest
  dedupctl policy set webhooks --replace --completed-ttl 48h`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error { return a.policySet(cmd, argv[0], &f) },
	}
	fl := cmd.Flags()
	fl.Var(durationFlag{&f.completed}, "completed-ttl", "how long a COMPLETED record is kept")
	fl.Var(durationFlag{&f.rejected}, "rejected-ttl", "how long a REJECTED record is kept")
	fl.Var(durationFlag{&f.released}, "released-ttl", "how long a RELEASED record, or an abandoned PENDING claim, is kept")
	fl.Var(durationFlag{&f.defaultLease}, "default-lease-ttl", "lease of a claim that names none")
	fl.Var(durationFlag{&f.maxLease}, "max-lease-ttl", "longest lease a claim may ask for")
	fl.Var(sizeFlag{&f.maxResult}, "max-result-bytes", "largest result or rejection detail, e.g. 64KiB")
	fl.BoolVar(&f.requireDigest, "require-digest", false, "refuse claims without a digest (--require-digest=false to allow them)")
	fl.BoolVar(&f.replace, "replace", false, "start from an empty policy instead of the stored one")
	fl.BoolVar(&f.dryRun, "dry-run", false, "show what would change; change nothing")
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// apply puts the fields given on the command line onto p.
func (f *policySetFlags) apply(cmd *cobra.Command, p *dedupv1.Policy) (changed int) {
	durations := []struct {
		flag string
		v    time.Duration
		dst  **durationpb.Duration
	}{
		{"completed-ttl", f.completed, &p.CompletedTtl},
		{"rejected-ttl", f.rejected, &p.RejectedTtl},
		{"released-ttl", f.released, &p.ReleasedTtl},
		{"default-lease-ttl", f.defaultLease, &p.DefaultLeaseTtl},
		{"max-lease-ttl", f.maxLease, &p.MaxLeaseTtl},
	}
	for _, d := range durations {
		if cmd.Flags().Changed(d.flag) {
			*d.dst = nil
			if d.v != 0 {
				*d.dst = durationpb.New(d.v)
			}
			changed++
		}
	}
	if cmd.Flags().Changed("max-result-bytes") {
		p.MaxResultBytes = f.maxResult
		changed++
	}
	if cmd.Flags().Changed("require-digest") {
		p.RequireDigest = f.requireDigest
		changed++
	}
	return changed
}

func (a *app) policySet(cmd *cobra.Command, consumer string, f *policySetFlags) error {
	admin, err := a.admin()
	if err != nil {
		return err
	}
	ctx, cancel := a.callContext(cmd.Context())
	defer cancel()
	current, err := currentPolicy(ctx, admin, consumer)
	if err != nil {
		return err
	}
	changed := 0
	policy := mergePolicy(consumer, current.GetPolicy(), f.replace, func(p *dedupv1.Policy) { changed = f.apply(cmd, p) })
	if changed == 0 && !f.replace {
		return usagef("nothing to set: give at least one of --completed-ttl, --rejected-ttl, --released-ttl, --default-lease-ttl, --max-lease-ttl, --max-result-bytes, --require-digest")
	}
	preview, err := admin.SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: policy, DryRun: true})
	if err != nil {
		return err
	}
	shortens := completedTTL(preview.GetEffective()) < completedTTL(current.GetEffective())
	a.printWarnings(preview, current.GetEffective(), shortens)
	if f.dryRun {
		if a.jsonOutput() {
			return a.printJSON(preview)
		}
		a.printPolicyChange(consumer, current.GetEffective(), preview)
		fmt.Fprintln(a.std.out, "dry run: nothing changed")
		return nil
	}
	summarised := false
	if shortens && !f.yes && a.std.interactive {
		a.printPolicyChange(consumer, current.GetEffective(), preview)
		summarised = true
		ok, err := a.confirm(cmd.Context(), fmt.Sprintf("Shorten completed_ttl of %s to %s?", consumer, duration.Format(completedTTL(preview.GetEffective()))))
		if err != nil {
			return err
		}
		if !ok {
			return errAborted
		}
	}
	// --timeout bounds each call, not the time the user takes to answer.
	setCtx, cancelSet := a.callContext(cmd.Context())
	defer cancelSet()
	resp, err := admin.SetPolicy(setCtx, &dedupv1.SetPolicyRequest{Policy: policy})
	if err != nil {
		return err
	}
	if a.jsonOutput() {
		return a.printJSON(resp)
	}
	if !summarised {
		a.printPolicyChange(consumer, current.GetEffective(), resp)
	}
	fmt.Fprintf(a.std.out, "policy of %s set\n", consumer)
	return nil
}

// printWarnings writes the server's warnings on stderr, and one of
// dedupctl's own when the completed TTL shortens and the server said
// nothing.
func (a *app) printWarnings(resp *dedupv1.SetPolicyResponse, before *dedupv1.Policy, shortens bool) {
	for _, w := range resp.GetWarnings() {
		fmt.Fprintln(a.std.err, "warning: "+w)
	}
	if shortens && len(resp.GetWarnings()) == 0 {
		fmt.Fprintf(a.std.err, "warning: completed_ttl shortens from %s to %s: a redelivery that arrives after the new TTL runs the work again\n",
			duration.Format(completedTTL(before)), duration.Format(completedTTL(resp.GetEffective())))
	}
}

// printPolicyChange is the summary of a policy change: every field before
// and after, and the records it concerns.
func (a *app) printPolicyChange(consumer string, before *dedupv1.Policy, resp *dedupv1.SetPolicyResponse) {
	fmt.Fprintf(a.std.out, "policy of consumer %s\n", consumer)
	w := a.table()
	row(w, "FIELD", "BEFORE", "AFTER", "")
	for _, f := range policyFields {
		after := f.get(resp.GetEffective())
		if f.isDefault(resp.GetPolicy()) {
			after += " (default)"
		}
		mark := ""
		if f.get(before) != f.get(resp.GetEffective()) {
			mark = "changed"
		}
		row(w, f.name, f.get(before), after, mark)
	}
	w.Flush()
	fmt.Fprintf(a.std.out, "stored records: %d keep the expiry they have; pending claims: %d take the new TTLs when they finish\n",
		resp.GetStoredRecords(), resp.GetPendingRecords())
}

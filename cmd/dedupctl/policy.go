package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// policyField is one field of a policy as the tables show it.
type policyField struct {
	name string
	// get formats the field; isDefault reports that it is unset, so that
	// the server default applies.
	get       func(*dedupv1.Policy) string
	isDefault func(*dedupv1.Policy) bool
}

func durationField(name string, get func(*dedupv1.Policy) *durationpb.Duration) policyField {
	return policyField{
		name:      name,
		get:       func(p *dedupv1.Policy) string { return formatProtoDuration(get(p)) },
		isDefault: func(p *dedupv1.Policy) bool { return get(p).AsDuration() == 0 },
	}
}

var policyFields = []policyField{
	durationField("completed_ttl", (*dedupv1.Policy).GetCompletedTtl),
	durationField("rejected_ttl", (*dedupv1.Policy).GetRejectedTtl),
	durationField("released_ttl", (*dedupv1.Policy).GetReleasedTtl),
	durationField("default_lease_ttl", (*dedupv1.Policy).GetDefaultLeaseTtl),
	durationField("max_lease_ttl", (*dedupv1.Policy).GetMaxLeaseTtl),
	{
		name:      "max_result_bytes",
		get:       func(p *dedupv1.Policy) string { return formatSize(p.GetMaxResultBytes()) },
		isDefault: func(p *dedupv1.Policy) bool { return p.GetMaxResultBytes() == 0 },
	},
	{
		name:      "require_digest",
		get:       func(p *dedupv1.Policy) string { return yesNo(p.GetRequireDigest()) },
		isDefault: func(p *dedupv1.Policy) bool { return !p.GetRequireDigest() },
	},
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newPolicyCommand(a *app) *cobra.Command {
	return group("policy", "Set, show and delete per-consumer retention policies",
		`  dedupctl policy set payments --completed-ttl 7d --dry-run
  dedupctl policy get payments
  dedupctl policy list -o json`,
		newPolicySetCommand(a), newPolicyGetCommand(a), newPolicyListCommand(a), newPolicyDeleteCommand(a))
}

func newPolicyGetCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get CONSUMER",
		Short: "Show a consumer's stored policy and the policy in force",
		Long: `Show a consumer's stored policy beside the policy in force for it, which
fills every unset field with the server default. A consumer with no stored
policy is no error: its stored fields show "-" and the defaults are in force.`,
		Example: `  dedupctl policy get payments
  dedupctl policy get payments -o json | jq -r .effective.completed_ttl`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			admin, err := a.admin()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: argv[0]})
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			if resp.GetPolicy() == nil {
				fmt.Fprintf(a.std.out, "consumer %s has no stored policy; the server defaults apply\n", argv[0])
			} else {
				fmt.Fprintf(a.std.out, "consumer %s, policy set %s\n", argv[0], formatTime(resp.GetPolicy().GetUpdatedAt(), a.now()))
			}
			w := a.table()
			row(w, "FIELD", "STORED", "IN FORCE")
			for _, f := range policyFields {
				stored := "default"
				if p := resp.GetPolicy(); p != nil && !f.isDefault(p) {
					stored = f.get(p)
				}
				row(w, f.name, stored, f.get(resp.GetEffective()))
			}
			return w.Flush()
		},
	}
}

func newPolicyListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every stored policy and the server defaults",
		Long: `List every stored policy, by consumer, after a first row with the server
defaults. "-" marks a field left to the server default.`,
		Example: `  dedupctl policy list
  dedupctl policy list -o json | jq -r '.policies[].consumer'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			admin, err := a.admin()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.ListPolicies(ctx, &dedupv1.ListPoliciesRequest{})
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			w := a.table()
			header := []string{"CONSUMER"}
			for _, f := range policyFields {
				header = append(header, strings.ToUpper(f.name))
			}
			row(w, append(header, "UPDATED")...)
			row(w, policyRow("(defaults)", resp.GetDefaults(), false, "-")...)
			for _, p := range resp.GetPolicies() {
				row(w, policyRow(p.GetConsumer(), p, true, formatTime(p.GetUpdatedAt(), a.now()))...)
			}
			return w.Flush()
		},
	}
}

// policyRow is one row of the policy list; with dashDefaults an unset
// field shows as "-".
func policyRow(consumer string, p *dedupv1.Policy, dashDefaults bool, updated string) []string {
	cells := []string{consumer}
	for _, f := range policyFields {
		if dashDefaults && f.isDefault(p) {
			cells = append(cells, "-")
		} else {
			cells = append(cells, f.get(p))
		}
	}
	return append(cells, updated)
}

func newPolicyDeleteCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete CONSUMER",
		Short: "Delete a consumer's policy so that the server defaults apply again",
		Long: `Delete a consumer's policy. Its records keep the expiry they have; records
that finish from now on get the server defaults. A consumer without a
policy is POLICY_NOT_FOUND.`,
		Example: `  dedupctl policy delete payments`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			admin, err := a.admin()
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd.Context())
			defer cancel()
			resp, err := admin.DeletePolicy(ctx, &dedupv1.DeletePolicyRequest{Consumer: argv[0]})
			if err != nil {
				return err
			}
			if a.jsonOutput() {
				return a.printJSON(resp)
			}
			fmt.Fprintf(a.std.out, "deleted the policy of consumer %s; the server defaults apply to it now\n", argv[0])
			w := a.table()
			row(w, "FIELD", "DELETED")
			for _, f := range policyFields {
				v := f.get(resp.GetPolicy())
				if f.isDefault(resp.GetPolicy()) {
					v = "default"
				}
				row(w, f.name, v)
			}
			return w.Flush()
		},
	}
}

// completedTTL is the completed TTL of a policy in force.
func completedTTL(p *dedupv1.Policy) time.Duration { return p.GetCompletedTtl().AsDuration() }

// mergePolicy is the policy to store: the stored one (unless replace),
// with the fields given on the command line put over it.
func mergePolicy(consumer string, stored *dedupv1.Policy, replace bool, set func(*dedupv1.Policy)) *dedupv1.Policy {
	p := &dedupv1.Policy{Consumer: consumer}
	if stored != nil && !replace {
		p = proto.CloneOf(stored)
		p.UpdatedAt = nil
	}
	set(p)
	return p
}

// currentPolicy fetches a consumer's stored policy and the one in force.
func currentPolicy(ctx context.Context, admin dedupv1.AdminServiceClient, consumer string) (*dedupv1.GetPolicyResponse, error) {
	return admin.GetPolicy(ctx, &dedupv1.GetPolicyRequest{Consumer: consumer})
}

package main

import (
	"strings"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestCLIPolicy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		// No policy yet: the server defaults (dedupd's flag defaults).
		r := s.ok(t, "policy", "get", "payments")
		if !strings.Contains(r.stdout, "consumer payments has no stored policy") {
			t.Errorf("policy get without a policy:\n%s", r.stdout)
		}
		rows := tableRows(t, tableAfter(t, r.stdout, "FIELD"))
		if got := rows["completed_ttl"]; strings.Join(got, " ") != "completed_ttl default 24h" {
			t.Errorf("completed_ttl row = %q", got)
		}
		if got := rows["max_result_bytes"]; strings.Join(got, " ") != "max_result_bytes default 64KiB" {
			t.Errorf("max_result_bytes row = %q", got)
		}

		// A dry run shows the change and stores nothing.
		r = s.ok(t, "policy", "set", "payments", "--completed-ttl", "7d", "--max-result-bytes", "1MiB", "--dry-run")
		rows = tableRows(t, tableAfter(t, r.stdout, "FIELD"))
		if got := strings.Join(rows["completed_ttl"], " "); got != "completed_ttl 24h 168h changed" {
			t.Errorf("dry run completed_ttl row = %q\n%s", got, r.stdout)
		}
		if got := strings.Join(rows["rejected_ttl"], " "); got != "rejected_ttl 24h 24h (default)" {
			t.Errorf("dry run rejected_ttl row = %q", got)
		}
		if !strings.Contains(r.stdout, "dry run: nothing changed") {
			t.Errorf("dry run does not say so:\n%s", r.stdout)
		}
		var get dedupv1.GetPolicyResponse
		parseJSON(t, s.ok(t, "policy", "get", "payments", "-o", "json").stdout, &get)
		if get.GetPolicy() != nil {
			t.Fatalf("a dry run stored a policy: %v", get.GetPolicy())
		}

		// Set it for real, with JSON output.
		var set dedupv1.SetPolicyResponse
		parseJSON(t, s.ok(t, "policy", "set", "payments", "--completed-ttl", "7d", "--max-result-bytes", "1MiB", "-o", "json").stdout, &set)
		if got := set.GetPolicy().GetCompletedTtl().AsDuration(); got != 7*24*time.Hour {
			t.Errorf("stored completed_ttl = %v", got)
		}
		if got := set.GetEffective().GetRejectedTtl().AsDuration(); got != 24*time.Hour {
			t.Errorf("effective rejected_ttl = %v, want the 24h default", got)
		}

		// Changing one field keeps the others.
		s.ok(t, "policy", "set", "payments", "--require-digest")
		generic := parseJSON(t, s.ok(t, "policy", "get", "payments", "-o", "json").stdout, &get)
		if p := get.GetPolicy(); p.GetMaxResultBytes() != 1<<20 || !p.GetRequireDigest() || p.GetCompletedTtl().AsDuration() != 7*24*time.Hour {
			t.Errorf("policy after a second set = %v", p)
		}
		if _, ok := generic["effective"].(map[string]any)["max_result_bytes"]; !ok {
			t.Errorf("JSON does not use the proto field names: %v", generic)
		}

		// Shortening completed_ttl warns; off a terminal it applies.
		r = s.ok(t, "policy", "set", "payments", "--completed-ttl", "12h")
		if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "completed_ttl") {
			t.Errorf("no warning for a shorter completed_ttl; stderr:\n%s", r.stderr)
		}
		if !strings.Contains(r.stdout, "policy of payments set") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		parseJSON(t, s.ok(t, "policy", "get", "payments", "-o", "json").stdout, &get)
		if got := get.GetEffective().GetCompletedTtl().AsDuration(); got != 12*time.Hour {
			t.Errorf("completed_ttl after shortening = %v", got)
		}

		// --replace starts from the defaults.
		s.ok(t, "policy", "set", "webhooks", "--rejected-ttl", "1h")
		s.ok(t, "policy", "set", "webhooks", "--replace", "--released-ttl", "2h")
		parseJSON(t, s.ok(t, "policy", "get", "webhooks", "-o", "json").stdout, &get)
		if p := get.GetPolicy(); p.GetRejectedTtl() != nil || p.GetReleasedTtl().AsDuration() != 2*time.Hour {
			t.Errorf("policy after --replace = %v", p)
		}

		// list: defaults first, then by consumer, "-" for defaults.
		r = s.ok(t, "policy", "list")
		rows = tableRows(t, r.stdout)
		if got := rows["(defaults)"]; len(got) < 8 || got[1] != "24h" || got[6] != "64KiB" {
			t.Errorf("defaults row = %q", got)
		}
		if got := rows["payments"]; len(got) < 8 || got[1] != "12h" || got[2] != "-" || got[6] != "1MiB" || got[7] != "yes" {
			t.Errorf("payments row = %q\n%s", got, r.stdout)
		}
		var list dedupv1.ListPoliciesResponse
		parseJSON(t, s.ok(t, "policy", "list", "-o", "json").stdout, &list)
		if len(list.GetPolicies()) != 2 || list.GetPolicies()[0].GetConsumer() != "payments" || list.GetDefaults() == nil {
			t.Errorf("policy list JSON = %v", &list)
		}

		// delete, then it is gone.
		r = s.ok(t, "policy", "delete", "webhooks")
		if !strings.Contains(r.stdout, "deleted the policy of consumer webhooks") {
			t.Errorf("policy delete:\n%s", r.stdout)
		}
		s.fails(t, exitFailure, "POLICY_NOT_FOUND", "policy", "delete", "webhooks")
	})
}

func TestCLIPolicyUsageErrors(t *testing.T) {
	s := &server{addr: "127.0.0.1:1"} // never reached: each is refused before
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"policy", "set", "payments"}, "nothing to set"},
		{[]string{"policy", "set", "payments", "--completed-ttl", "soon"}, "invalid argument"},
		{[]string{"policy", "set", "payments", "--max-result-bytes", "64KB"}, "unknown unit"},
		{[]string{"policy", "set", "payments", "--completed-ttl", "-1h"}, "must not be negative"},
		{[]string{"policy", "get"}, "usage: dedupctl policy get CONSUMER"},
		{[]string{"policy", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"-o", "yaml", "policy", "list"}, "--output must be table or json"},
	}
	for _, tt := range tests {
		if strings.Contains(tt.want, "nothing to set") {
			continue // needs a server: covered below
		}
		s.fails(t, exitUsage, tt.want, tt.args...)
	}
	forEachBackend(t, func(t *testing.T, s *server) {
		s.fails(t, exitUsage, "nothing to set", "policy", "set", "payments")
		s.fails(t, exitFailure, "INVALID_FIELD", "policy", "get", "Not A Consumer")
	})
}

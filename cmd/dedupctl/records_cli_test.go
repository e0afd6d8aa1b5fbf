package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestCLIRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		s.complete(t, "shop", "order-1", []byte(`{"ok":true}`))
		s.complete(t, "shop", "order-2", []byte{0xff, 0x00, 0x01})
		s.reject(t, "shop", "order-3", "OUT_OF_STOCK", false)
		s.abandon(t, "shop", "host-a", "order-4")
		s.complete(t, "shop", "refund-1", []byte("done"))

		// get: text result as text, binary as base64, digest in hex.
		r := s.ok(t, "records", "get", "shop", "order-1")
		rows := tableRows(t, r.stdout)
		for field, want := range map[string]string{"state": "COMPLETED", "result": `{"ok":true}`, "digest": "hex:abcd", "owner": "worker-1", "fencing_token": "1"} {
			if got := strings.Join(rows[field][1:], " "); got != want {
				t.Errorf("records get %s = %q, want %q", field, got, want)
			}
		}
		// A finished record holds no lease: none is shown, while a PENDING
		// one (here abandoned, its lease run out) shows when it ends.
		if got := rows["lease_expires_at"]; len(got) != 2 || got[1] != "-" {
			t.Errorf("a completed record shows lease_expires_at %q, want -", got)
		}
		if got := tableRows(t, s.ok(t, "records", "get", "shop", "order-4").stdout)["lease_expires_at"]; len(got) < 3 || got[1] == "-" {
			t.Errorf("a PENDING record shows lease_expires_at %q, want its time", got)
		}
		r = s.ok(t, "records", "get", "shop", "order-2")
		if got := strings.Join(tableRows(t, r.stdout)["result"][1:], " "); got != "hex:ff0001 (3 bytes)" {
			t.Errorf("binary result shown as %q", got)
		}
		var lookup dedupv1.LookupResponse
		parseJSON(t, s.ok(t, "records", "get", "shop", "order-2", "-o", "json").stdout, &lookup)
		if got := lookup.GetRecord().GetResult(); string(got) != "\xff\x00\x01" {
			t.Errorf("JSON result = %q", got)
		}
		s.fails(t, exitFailure, `RECORD_NOT_FOUND`, "records", "get", "shop", "nope")

		// list: all, filtered, paged.
		r = s.ok(t, "records", "list", "shop")
		rows = tableRows(t, r.stdout)
		for key, state := range map[string]string{"order-1": "COMPLETED", "order-3": "REJECTED", "order-4": "PENDING", "refund-1": "COMPLETED"} {
			if got := rows[key]; len(got) < 2 || got[1] != state {
				t.Errorf("list row %s = %q, want state %s\n%s", key, got, state, r.stdout)
			}
		}
		if len(rows) != 6 { // header + 5
			t.Errorf("list has %d lines, want 6:\n%s", len(rows), r.stdout)
		}
		r = s.ok(t, "records", "list", "shop", "--state", "completed,rejected", "--prefix", "order-")
		if got := keysOf(tableRows(t, r.stdout)); got != "order-1 order-2 order-3" {
			t.Errorf("filtered list keys = %q\n%s", got, r.stdout)
		}
		r = s.ok(t, "records", "list", "shop", "--updated-after", "1h", "--created-before", "2999-01-01T00:00:00Z", "--lease-expired")
		if got := keysOf(tableRows(t, r.stdout)); got != "order-4" {
			t.Errorf("lease-expired list keys = %q", got)
		}
		r = s.ok(t, "records", "list", "shop", "--updated-before", "1h")
		if strings.TrimSpace(r.stdout) != "no records match" {
			t.Errorf("list of records older than 1h:\n%s", r.stdout)
		}
		r = s.ok(t, "records", "list", "shop", "--limit", "2")
		if got := keysOf(tableRows(t, r.stdout)); got != "order-1 order-2" || !strings.Contains(r.stderr, "more match") {
			t.Errorf("--limit 2: keys %q, stderr %q", got, r.stderr)
		}
		var list dedupv1.ListRecordsResponse
		generic := parseJSON(t, s.ok(t, "records", "list", "shop", "--all", "--page-size", "2", "-o", "json").stdout, &list)
		if len(list.GetRecords()) != 5 || list.GetNextPageToken() != "" {
			t.Errorf("--all by pages of 2: %d records, token %q", len(list.GetRecords()), list.GetNextPageToken())
		}
		if _, ok := generic["next_page_token"]; !ok {
			t.Errorf("JSON lacks next_page_token: %v", generic)
		}
		parseJSON(t, s.ok(t, "records", "list", "shop", "--limit", "3", "--page-size", "2", "-o", "json").stdout, &list)
		if len(list.GetRecords()) != 3 || list.GetNextPageToken() == "" {
			t.Errorf("--limit 3: %d records, token %q", len(list.GetRecords()), list.GetNextPageToken())
		}
		s.fails(t, exitUsage, "--state", "records", "list", "shop", "--state", "done")
		s.fails(t, exitUsage, "--updated-after", "records", "list", "shop", "--updated-after", "yesterday")

		// stats.
		r = s.ok(t, "stats")
		row := tableRows(t, r.stdout)["shop"]
		if want := "shop 1 1 3 1 0 0"; len(row) < 7 || strings.Join(row[:7], " ") != want {
			t.Errorf("stats row = %q, want it to start %q\n%s", row, want, r.stdout)
		}
		var stats dedupv1.StatsResponse
		parseJSON(t, s.ok(t, "stats", "shop", "-o", "json").stdout, &stats)
		if c := stats.GetConsumers(); len(c) != 1 || c[0].GetCompleted() != 3 || c[0].GetPendingLeaseExpired() != 1 || c[0].GetOldestPendingAt() == nil {
			t.Errorf("stats JSON = %v", &stats)
		}

		// reconcile: the abandoned claim, and the procedure.
		r = s.ok(t, "reconcile", "shop")
		row = tableRows(t, tableAfter(t, r.stdout, "KEY"))["order-4"]
		if len(row) < 4 || row[1] != "host-a" || row[2] != "1" || row[3] != "1" {
			t.Errorf("reconcile row = %q\n%s", row, r.stdout)
		}
		for _, want := range []string{"\n1 claim to reconcile.", "dedupctl records delete shop KEY", "docs/guarantees.md"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("reconcile output lacks %q:\n%s", want, r.stdout)
			}
		}
		parseJSON(t, s.ok(t, "reconcile", "shop", "-o", "json").stdout, &list)
		if len(list.GetRecords()) != 1 || list.GetRecords()[0].GetKey() != "order-4" {
			t.Errorf("reconcile JSON = %v", &list)
		}
		r = s.ok(t, "reconcile", "empty")
		if !strings.Contains(r.stdout, "nothing to reconcile") {
			t.Errorf("reconcile of a consumer without records:\n%s", r.stdout)
		}

		// delete: shows what it deleted, then it is gone.
		r = s.ok(t, "records", "delete", "shop", "order-3", "--yes")
		if !strings.HasPrefix(r.stdout, "deleted:") || !strings.Contains(r.stdout, "OUT_OF_STOCK: no") {
			t.Errorf("records delete:\n%s", r.stdout)
		}
		var del dedupv1.DeleteRecordResponse
		parseJSON(t, s.ok(t, "records", "delete", "shop", "order-1", "-o", "json", "--yes").stdout, &del)
		if del.GetRecord().GetKey() != "order-1" || del.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED {
			t.Errorf("delete JSON = %v", &del)
		}
		s.fails(t, exitFailure, `RECORD_NOT_FOUND`, "records", "delete", "shop", "order-1", "--yes")
		s.fails(t, exitFailure, `RECORD_NOT_FOUND`, "records", "get", "shop", "order-3")
	})
}

// keysOf lists the first fields of the table rows, header excluded, sorted.
func keysOf(rows map[string][]string) string {
	var keys []string
	for k := range rows {
		if k != "KEY" {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	return strings.Join(keys, " ")
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestCLIConnectionErrors(t *testing.T) {
	r := runCtl(t, "127.0.0.1:1", "stats")
	first, _, _ := strings.Cut(r.stderr, "\n")
	if r.code != exitFailure || first != "dedupctl: cannot reach dedupd at 127.0.0.1:1: connection refused (is it running? set --server or DEDUPD_ADDR)" {
		t.Errorf("stats against a closed port: %v", r)
	}
	r = runCtl(t, "127.0.0.1:1", "--token", "tok-XYZZY", "--server", "dedupd.example:7070", "stats")
	if r.code != exitUsage || strings.Contains(r.stderr+r.stdout, "tok-XYZZY") {
		t.Errorf("plaintext token to a remote host: %v", r)
	}
	r = runCtl(t, "127.0.0.1:1", "--help")
	if r.code != 0 || strings.Contains(r.stdout, "tok-") {
		t.Errorf("--help: %v", r)
	}
	for _, args := range [][]string{{"records"}, {"policy"}, {"purge", "--help"}, {"completion", "bash"}} {
		if r := runCtl(t, "127.0.0.1:1", args...); r.code != 0 || r.stdout == "" {
			t.Errorf("dedupctl %v: %v", args, fmt.Sprint(r))
		}
	}
}

// TestCLIEscapesStoredText: a key, owner and rejection reason holding
// terminal escape sequences, a newline and a tab are printed escaped in
// every table, so they can neither clear the screen nor draw a fake row,
// and unchanged in JSON.
func TestCLIEscapesStoredText(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		const (
			key    = "evil\x1b[2J\x1b[H\nfake\tCOMPLETED"
			owner  = "host\x1b]0;pwned\x07"
			reason = "R\x1b[31mED"
		)
		s.claim(t, "shop", key, owner, time.Minute)
		s.reject(t, "shop", "plain", reason, false)

		for _, args := range [][]string{
			{"records", "list", "shop"},
			{"records", "get", "shop", key},
			{"records", "get", "shop", "plain"},
		} {
			r := s.ok(t, args...)
			if strings.ContainsAny(r.stdout, "\x1b\x07\r") || strings.Contains(r.stdout, "\nfake") {
				t.Errorf("dedupctl %s printed raw control characters:\n%q", strings.Join(args[:2], " "), r.stdout)
			}
		}
		rows := tableRows(t, s.ok(t, "records", "list", "shop").stdout)
		if len(rows) != 3 { // header, the escaped key, plain
			t.Errorf("list has %d rows, want 3: %v", len(rows), rows)
		}
		if got := rows[`evil\x1b[2J\x1b[H\nfake\tCOMPLETED`]; len(got) < 5 || got[4] != `host\x1b]0;pwned\a` {
			t.Errorf("escaped row = %q", got)
		}
		if got := rows["plain"]; !strings.Contains(strings.Join(got, " "), `R\x1b[31mED`) {
			t.Errorf("escaped reason row = %q", got)
		}

		var lookup dedupv1.LookupResponse
		parseJSON(t, s.ok(t, "records", "get", "shop", key, "-o", "json").stdout, &lookup)
		if lookup.GetRecord().GetKey() != key || lookup.GetRecord().GetOwner() != owner {
			t.Errorf("JSON changed the key or owner: %q, %q", lookup.GetRecord().GetKey(), lookup.GetRecord().GetOwner())
		}
	})
}

// TestCLIReadsDedupdAddr: dedupctl takes dedupd's address from DEDUPD_ADDR,
// the variable every dedupd client reads, ahead of its older
// DEDUPCTL_SERVER; --server wins over both.
func TestCLIReadsDedupdAddr(t *testing.T) {
	s := startDedupd(t)
	const nowhere = "127.0.0.1:1"
	if r := runCtlEnv(t, nowhere, []string{"DEDUPD_ADDR=" + s.addr}, "stats"); r.code != 0 {
		t.Errorf("DEDUPD_ADDR set, DEDUPCTL_SERVER elsewhere: %v", r)
	}
	r := runCtlEnv(t, s.addr, []string{"DEDUPD_ADDR=" + nowhere}, "stats")
	if r.code != exitFailure || !strings.Contains(r.stderr, "cannot reach dedupd at "+nowhere) {
		t.Errorf("DEDUPD_ADDR elsewhere: %v", r)
	}
	if r := runCtlEnv(t, nowhere, []string{"DEDUPD_ADDR=" + nowhere}, "--server", s.addr, "stats"); r.code != 0 {
		t.Errorf("--server over DEDUPD_ADDR: %v", r)
	}
	if r := runCtlEnv(t, s.addr, nil, "stats"); r.code != 0 {
		t.Errorf("DEDUPCTL_SERVER alone: %v", r)
	}
}

// TestCLIRecordsDeleteIsSafe: off a terminal, delete refuses without
// --yes (exit 2, nothing deleted); on one it shows the record and asks,
// and warns first when the record is PENDING with a live lease; what it
// prints is the record as it was stored (its expiry, not the moment of
// the delete).
func TestCLIRecordsDeleteIsSafe(t *testing.T) {
	s := startDedupd(t)
	ctx := context.Background()
	s.complete(t, "shop", "done-1", []byte("ok"))
	s.claim(t, "shop", "held-1", "worker-a", time.Hour)

	s.fails(t, exitUsage, "pass --yes", "records", "delete", "shop", "done-1")
	before := s.ok(t, "records", "get", "shop", "done-1").stdout

	r := inProcess{stdin: "n\n", interactive: true}.run(ctx, s, "records", "delete", "shop", "held-1")
	if r.code != exitFailure || !strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stderr, "lease") ||
		!strings.Contains(r.stderr, "worker-a") || !strings.Contains(r.stderr, "[y/N]") || !strings.Contains(r.stderr, "aborted: nothing changed") {
		t.Fatalf("answering n for a live lease: %v", r)
	}
	s.ok(t, "records", "get", "shop", "held-1")

	r = inProcess{stdin: "y\n", interactive: true}.run(ctx, s, "records", "delete", "shop", "done-1")
	if r.code != 0 || strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stdout, "deleted:") {
		t.Fatalf("answering y for a completed record: %v", r)
	}
	expiry := func(out string) string {
		for line := range strings.Lines(out) {
			if v, ok := strings.CutPrefix(line, "expires_at"); ok {
				at, _, _ := strings.Cut(strings.TrimSpace(v), " (")
				return at
			}
		}
		return ""
	}
	_, printed, _ := strings.Cut(r.stdout, "deleted:")
	if want := expiry(before); want == "" || expiry(printed) != want {
		t.Fatalf("the deleted record's expires_at %q, want %q as stored:\n%s", expiry(printed), want, printed)
	}
	s.fails(t, exitFailure, "RECORD_NOT_FOUND", "records", "get", "shop", "done-1")
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestKeysNeverReachTheLogs: every refusal that names a key (digest
// mismatch, lease lost, already finished, not found, an invalid key) leaves
// the key out of every log line, at the most verbose level, as
// docs/operations.md promises. The oracle is a plain search of the
// captured log output for the key.
func TestKeysNeverReachTheLogs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		p := startDedupd(t, append(flags, "--log-level", "debug")...)
		c := dedupv1.NewDedupServiceClient(p.dial(t))
		ctx := context.Background()
		const key = "secret-key-5b0e91"

		held := claim(t, c, key, []byte("d1"), 0)
		_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: []byte("d2")})
		wantError(t, err, codes.FailedPrecondition, "DIGEST_MISMATCH")
		_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: held.GetRecord().GetFencingToken() + 1})
		wantError(t, err, codes.Aborted, "LEASE_LOST")
		_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: held.GetRecord().GetFencingToken(), Result: []byte("r")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Reject(ctx, &dedupv1.RejectRequest{Consumer: consumer, Key: key, FencingToken: held.GetRecord().GetFencingToken(), Reason: "r"})
		wantError(t, err, codes.FailedPrecondition, "ALREADY_FINISHED")
		_, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, Digest: []byte("d2")}) // mismatch on a finished record
		wantError(t, err, codes.FailedPrecondition, "DIGEST_MISMATCH")
		_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: key + "-absent"})
		wantError(t, err, codes.NotFound, "RECORD_NOT_FOUND")
		_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: key + strings.Repeat("x", 600)})
		wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
		p.stop(t)

		logs := p.Logs.String()
		if !strings.Contains(logs, "DIGEST_MISMATCH") && !strings.Contains(logs, "FailedPrecondition") {
			t.Fatalf("the refusals were not logged at all, so this test proves nothing; logs:\n%s", logs)
		}
		if strings.Contains(logs, key) {
			t.Fatalf("a key appears in the logs:\n%s", logs)
		}
	})
}

// TestForgedPageTokenIsAnInvalidField: a page token is opaque, not secret;
// one forged to continue from a key no request may carry (NUL, which
// PostgreSQL's TEXT refuses) is INVALID_FIELD page_token on every store,
// never INTERNAL. It is forged the way a caller would: from a real token.
func TestForgedPageTokenIsAnInvalidField(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		p := startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(p.dial(t))
		claim(t, c, "a", nil, 0)
		claim(t, c, "b", nil, 0)
		ctx := context.Background()
		first, err := c.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer, PageSize: 1})
		if err != nil || first.GetNextPageToken() == "" {
			t.Fatalf("first page = %v, %v; want a next page", first, err)
		}
		forge := func(key string) string {
			raw, err := base64.RawURLEncoding.DecodeString(first.GetNextPageToken())
			if err != nil {
				t.Fatal(err)
			}
			var tok map[string]string
			if err := json.Unmarshal(raw, &tok); err != nil {
				t.Fatal(err)
			}
			tok["k"] = key
			out, _ := json.Marshal(tok)
			return base64.RawURLEncoding.EncodeToString(out)
		}
		// The forging itself works: a forged token with a valid key lists
		// from there.
		page, err := c.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer, PageToken: forge("a")})
		if err != nil || len(page.GetRecords()) != 1 || page.GetRecords()[0].GetKey() != "b" {
			t.Fatalf("forged token with key a = %v, %v; want record b", page, err)
		}
		for _, bad := range []string{"a\x00b", strings.Repeat("k", 513)} {
			_, err = c.ListRecords(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer, PageToken: forge(bad)})
			st := wantError(t, err, codes.InvalidArgument, "INVALID_FIELD")
			if !strings.HasPrefix(st.Message(), "page_token") {
				t.Fatalf("forged token with key %.20q: %v, want INVALID_FIELD page_token", bad, err)
			}
		}
		p.stop(t)
	})
}

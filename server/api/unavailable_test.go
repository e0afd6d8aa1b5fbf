package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/loglimit"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestStoreUnavailableLogIsRateLimited: an outage fails every call, but the
// WARN lines with the cause are limited (10 at once, then one a second), so
// a burst of 1,000 failed calls logs at most 10 of them. Nothing here waits
// for the clock: the burst runs in far less than the second a refill takes,
// and the limit holds even if another test used some of the burst.
func TestStoreUnavailableLogIsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cause := fmt.Errorf("%w: pgstore: claim: failed to connect to `user=dedupd database=prod`", store.ErrUnavailable)
	for range 1000 {
		if err := failWith(context.Background(), log, cause, keyCall("inventory", "k")); err == nil {
			t.Fatal("failWith returned nil")
		}
	}
	if n := strings.Count(logs.String(), `msg="store unavailable"`); n > 10 {
		t.Fatalf("1000 failed calls logged %d store-unavailable lines, want at most 10", n)
	}
}

// TestConflictFitsAClientsTrailer: a unary refusal over the largest record
// a store may hold (a result of 16 MiB, a detail, every text field at its
// limit) encodes, base64 and all, within the 8 KiB of metadata that gRPC's
// C core (the Python client) accepts by default; past it the client gets
// INTERNAL: RST_STREAM instead of the refusal.
func TestConflictFitsAClientsTrailer(t *testing.T) {
	now := time.Now()
	big := store.Record{
		Consumer: strings.Repeat("c", 128), Key: strings.Repeat("k", MaxKeyBytes), State: store.Rejected, FencingToken: 9,
		Digest: make([]byte, MaxDigestBytes), Owner: strings.Repeat("o", MaxOwnerBytes), Result: make([]byte, 16<<20),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now, LeaseExpiresAt: now,
		Rejection: &store.Rejection{Reason: strings.Repeat("r", MaxReasonBytes), Message: strings.Repeat("m", MaxMessageBytes), Detail: make([]byte, 1<<20)},
	}
	log := slog.New(slog.DiscardHandler)
	for _, sentinel := range []error{store.ErrDigestMismatch, store.ErrAlreadyFinished, store.ErrLeaseLost} {
		err := failWith(context.Background(), log, &store.ConflictError{Err: sentinel, Record: big}, keyCall(big.Consumer, big.Key))
		st := status.Convert(err)
		if n := base64.StdEncoding.EncodedLen(proto.Size(st.Proto())); n > 8<<10 {
			t.Errorf("%v: the status trailer is %d bytes, over 8 KiB", sentinel, n)
		}
		var rec *dedupv1.Record
		for _, d := range st.Details() {
			if r, ok := d.(*dedupv1.Record); ok {
				rec = r
			}
		}
		if rec.GetKey() != big.Key || rec.GetOwner() != big.Owner || rec.GetFencingToken() != 9 || rec.GetRejection().GetReason() != big.Rejection.Reason {
			t.Errorf("%v: the record lost what identifies it: %.200v", sentinel, rec)
		}
		if len(rec.GetResult()) != 0 || len(rec.GetRejection().GetDetail()) != 0 {
			t.Errorf("%v: a payload over %d bytes rode along with the refusal", sentinel, MaxRefusalPayloadBytes)
		}
	}

	// At the payload limit, with every other field at its own, the record
	// comes whole and the trailer still fits.
	edge := big
	edge.Result = make([]byte, MaxRefusalPayloadBytes-200)
	edge.Rejection = &store.Rejection{Reason: big.Rejection.Reason, Message: strings.Repeat("m", 100), Detail: make([]byte, 100)}
	st := status.Convert(failWith(context.Background(), log, &store.ConflictError{Err: store.ErrDigestMismatch, Record: edge}, keyCall(edge.Consumer, edge.Key)))
	if n := base64.StdEncoding.EncodedLen(proto.Size(st.Proto())); n > 8<<10 {
		t.Errorf("at the payload limit the status trailer is %d bytes, over 8 KiB", n)
	}
	whole := false
	for _, d := range st.Details() {
		if r, ok := d.(*dedupv1.Record); ok {
			whole = len(r.GetResult()) == len(edge.Result) && len(r.GetRejection().GetDetail()) == 100 && r.GetRejection().GetMessage() == edge.Rejection.Message
		}
	}
	if !whole {
		t.Errorf("a record with %d payload bytes did not come whole with the refusal", MaxRefusalPayloadBytes)
	}
}

// ownUnavailableLimit gives the test a fresh burst of store-unavailable
// lines, whatever earlier tests used of the shared one.
func ownUnavailableLimit(t *testing.T) {
	t.Helper()
	shared := unavailableLines
	unavailableLines = loglimit.New(1, 10)
	t.Cleanup(func() { unavailableLines = shared })
}

// logLines decodes the JSON lines of a slog.JSONHandler.
func logLines(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestStreamOutageIsLoggedAsAKeyOutage: a store that does not answer,
// seen by a stream call, is logged as it is for a key call: one WARN
// "store unavailable" line with the cause and the consumer, every value
// cut (the stream id to clip.MaxLogged, never the key), and the lines of
// both kinds of call count against one rate limit. The caller is told
// only UnavailableMessage. (Before, a stream call logged nothing.)
func TestStreamOutageIsLoggedAsAKeyOutage(t *testing.T) {
	ownUnavailableLimit(t)
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // from here on every call fails with store.ErrUnavailable
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	policies := policy.NewKeys(st, testDefaults, time.Hour)
	streams := NewStreamService(st, policy.NewStreams(st, policies, 0, time.Hour), log)
	keys := NewDedupService(st, policies, log)
	longStream := strings.Repeat("s", MaxKeyBytes) // valid, and longer than a log line holds
	claimStream := func() error {
		_, err := streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "inventory", Stream: longStream,
			Sequence: 1, LeaseTtl: durationpb.New(time.Minute)})
		return err
	}
	claimKey := func() error {
		_, err := keys.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "inventory", Key: "order-77", LeaseTtl: durationpb.New(time.Minute)})
		return err
	}
	for i, call := range []func() error{claimStream, claimKey} { // in this order: the lines below
		if st := status.Convert(call()); st.Code() != codes.Unavailable || st.Message() != UnavailableMessage {
			t.Fatalf("call %d: %v %q, want UNAVAILABLE %q", i, st.Code(), st.Message(), UnavailableMessage)
		}
	}
	lines := logLines(t, &logs)
	if len(lines) != 2 {
		t.Fatalf("one stream and one key call in an outage logged %d lines, want one each:\n%s", len(lines), logs.String())
	}
	for i, line := range lines {
		cause, _ := line["err"].(string)
		if line["level"] != "WARN" || line["msg"] != "store unavailable" || line["consumer"] != "inventory" ||
			!strings.Contains(cause, "closed") || len(cause) > clip.MaxEchoed+len(clip.Marker) {
			t.Errorf("line %d = %v, want WARN store unavailable with the consumer and the cut cause", i, line)
		}
		if _, ok := line["key"]; ok || strings.Contains(logs.String(), "order-77") {
			t.Errorf("line %d logs the key: %v", i, line)
		}
	}
	if got := lines[0]["stream"]; got != strings.Repeat("s", clip.MaxLogged)+clip.Marker {
		t.Errorf("the stream call's line has stream %v, want the id cut to %d bytes", got, clip.MaxLogged)
	}
	if _, ok := lines[1]["stream"]; ok {
		t.Errorf("the key call's line names a stream: %v", lines[1])
	}

	// A burst of both kinds shares the one limit: 10 lines at once at
	// most, the two above included.
	for range 500 {
		_ = claimStream()
		_ = claimKey()
	}
	if n := strings.Count(logs.String(), `"msg":"store unavailable"`); n > 10 {
		t.Fatalf("1002 failed calls logged %d store-unavailable lines, want at most 10", n)
	}
}

// TestStreamInternalErrorIsLoggedCut: a bug seen by a stream call is
// logged at ERROR with the consumer and stream cut to clip.MaxLogged, as
// a key call's consumer is; the key of a key call is never logged.
func TestStreamInternalErrorIsLoggedCut(t *testing.T) {
	huge := strings.Repeat("C", 1<<20)
	for name, tgt := range map[string]target{"stream": streamCall(huge, huge), "key": keyCall(huge, "order-77")} {
		var logs bytes.Buffer
		err := failWith(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)), errors.New(strings.Repeat("bug ", 1<<16)), tgt)
		if status.Code(err) != codes.Internal {
			t.Fatalf("%s: %v, want INTERNAL", name, err)
		}
		lines := logLines(t, &logs)
		if len(lines) != 1 || lines[0]["level"] != "ERROR" || lines[0]["msg"] != "internal error" {
			t.Fatalf("%s: logged %v, want one ERROR internal error line", name, lines)
		}
		cut := strings.Repeat("C", clip.MaxLogged) + clip.Marker
		if lines[0]["consumer"] != cut || name == "stream" && lines[0]["stream"] != cut {
			t.Errorf("%s: consumer or stream not cut to %d bytes: %.300v", name, clip.MaxLogged, lines[0])
		}
		if cause, _ := lines[0]["err"].(string); len(cause) > clip.MaxEchoed+len(clip.Marker) {
			t.Errorf("%s: the cause is logged as %d bytes", name, len(cause))
		}
		if strings.Contains(logs.String(), "order-77") {
			t.Errorf("%s: the key is logged: %s", name, logs.String())
		}
	}
}

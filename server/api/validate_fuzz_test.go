package api

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// The fuzz targets here hold request validation to an oracle written
// independently of validate.go: a request is refused with INVALID_FIELD,
// naming one of its bad fields, exactly when it has one, and is otherwise
// handed to the store unchanged. Run them longer than CI does with
//
//	go test -run '^$' -fuzz FuzzValidate -fuzztime 5m ./server/api/
//	go test -run '^$' -fuzz FuzzDecodeRequest -fuzztime 5m ./server/api/

var fuzzLimits = policy.Limits{MaxLeaseTTL: time.Minute, MaxResultBytes: 100}

// fuzzRequest is every field any request has; method picks which request
// is built from it.
type fuzzRequest struct {
	method                 byte
	consumer, key, owner   string
	reason, message        string
	digest, result, detail []byte
	hasLease               bool
	leaseSeconds           int64
	leaseNanos             int32
	token                  int64
	retryable              bool
}

func FuzzValidate(f *testing.F) {
	f.Add(byte(0), "orders", "k", []byte("d"), true, int64(30), int32(0), "w", int64(1), []byte("r"), "R", "m", []byte{0}, false)
	f.Add(byte(1), "a.b-c_9", strings.Repeat("k", 512), []byte(nil), false, int64(0), int32(0), "", int64(7), []byte{}, "", "", []byte(nil), true)
	f.Add(byte(2), "Orders", "a\x00b", make([]byte, 65), true, int64(60), int32(1), "\xff", int64(0), make([]byte, 101), strings.Repeat("r", 129), "", []byte(nil), false)
	f.Add(byte(3), "x", "k", []byte(nil), true, int64(-1), int32(5), "o", int64(-5), []byte(nil), "", "\x00", []byte(nil), false)
	f.Add(byte(4), "", "", []byte(nil), true, int64(0), int32(0), "", int64(1), []byte(nil), "", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, method byte, consumer, key string, digest []byte, hasLease bool, leaseSeconds int64, leaseNanos int32,
		owner string, token int64, result []byte, reason, message string, detail []byte, retryable bool) {
		r := fuzzRequest{method: method % 5, consumer: consumer, key: key, owner: owner, reason: reason, message: message,
			digest: digest, result: result, detail: detail, hasLease: hasLease, leaseSeconds: leaseSeconds,
			leaseNanos: leaseNanos, token: token, retryable: retryable}
		st := &recordingStore{}
		err := call(fuzzService(st), r.build())
		checkValidation(t, r.invalidFields(), err, st)
		if err == nil {
			r.checkPassedThrough(t, st.cmd)
		}
	})
}

// FuzzDecodeRequest feeds arbitrary bytes to each method as its request:
// decoding never panics and fails only with MALFORMED_REQUEST or
// INVALID_FIELD; what decodes is then validated as in FuzzValidate.
func FuzzDecodeRequest(f *testing.F) {
	for m := range byte(5) {
		r := fuzzRequest{method: m, consumer: "orders", key: "k", owner: "w", reason: "R", digest: []byte("d"),
			result: []byte("r"), hasLease: true, leaseSeconds: 5, token: 3}
		wire, err := proto.Marshal(r.build())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m, wire)
		f.Add(m, append(slices.Clip(wire), 0x12, 0x01, 0xff)) // key = "\xff"
		f.Add(m, wire[:len(wire)-1])
	}
	f.Fuzz(func(t *testing.T, method byte, wire []byte) {
		req := fuzzRequest{method: method % 5}.build()
		if err := decodeRequest(wire, req); err != nil {
			wantReason(t, err, rpcerrors.ReasonMalformedRequest, rpcerrors.ReasonInvalidField)
			return
		}
		st := &recordingStore{}
		err := call(fuzzService(st), req)
		checkValidation(t, requestFields(req).invalidFields(), err, st)
	})
}

// checkValidation: refused with INVALID_FIELD naming a bad field, before
// any store work, exactly when there is a bad field.
func checkValidation(t *testing.T, invalid []string, err error, st *recordingStore) {
	t.Helper()
	if len(invalid) == 0 {
		if err != nil {
			t.Fatalf("valid request refused: %v", err)
		}
		if st.calls != 1 {
			t.Fatalf("valid request reached the store %d times, want once", st.calls)
		}
		return
	}
	if err == nil {
		t.Fatalf("request with bad fields %v accepted", invalid)
	}
	info := wantReason(t, err, rpcerrors.ReasonInvalidField)
	if !containsString(invalid, info.GetMetadata()["field"]) {
		t.Fatalf("refused naming field %q; the bad fields are %v (%v)", info.GetMetadata()["field"], invalid, err)
	}
	if st.calls != 0 {
		t.Fatalf("invalid request reached the store: %v", err)
	}
}

func wantReason(t *testing.T, err error, reasons ...string) *errdetails.ErrorInfo {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		t.Fatalf("error %v is not INVALID_ARGUMENT", err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == rpcerrors.ErrorDomain && containsString(reasons, info.GetReason()) {
			return info
		}
	}
	t.Fatalf("error %v carries no ErrorInfo with a reason in %v", err, reasons)
	return nil
}

func containsString(list []string, s string) bool {
	return slices.Contains(list, s)
}

// invalidFields is the oracle: every field of the request that breaks a
// documented limit (docs/api.md), checked without validate.go's code.
func (r fuzzRequest) invalidFields() []string {
	var bad []string
	check := func(field string, ok bool) {
		if !ok {
			bad = append(bad, field)
		}
	}
	check("consumer", isConsumerName(r.consumer))
	check("key", r.key != "" && isText(r.key, MaxKeyBytes))
	switch r.method {
	case 0: // Claim
		check("digest", len(r.digest) <= MaxDigestBytes)
		check("lease_ttl", !r.hasLease || r.leaseInRange())
		check("owner", isText(r.owner, MaxOwnerBytes))
	case 1: // Complete
		check("fencing_token", r.token > 0)
		check("result", len(r.result) <= fuzzLimits.MaxResultBytes)
	case 2: // Reject
		check("fencing_token", r.token > 0)
		check("reason", isText(r.reason, MaxReasonBytes))
		check("message", isText(r.message, MaxMessageBytes))
		check("detail", len(r.detail) <= fuzzLimits.MaxResultBytes)
	case 3: // ExtendLease
		check("fencing_token", r.token > 0)
		check("lease_ttl", !r.hasLease || r.leaseInRange())
	}
	return bad
}

func isConsumerName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i, c := range []byte(s) {
		lowerOrDigit := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !lowerOrDigit && (i == 0 || !strings.ContainsRune("._-", rune(c))) {
			return false
		}
	}
	return true
}

func isText(s string, limit int) bool {
	return len(s) <= limit && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// leaseInRange: a well-formed google.protobuf.Duration (seconds within
// ±10,000 years, nanos below a second with the same sign) that is positive
// at most the maximum lease, and a whole number of microseconds (the one
// rule of durations in docs/api.md).
func (r fuzzRequest) leaseInRange() bool {
	s, n := r.leaseSeconds, int64(r.leaseNanos)
	const maxSeconds = 315_576_000_000
	wellFormed := s >= -maxSeconds && s <= maxSeconds && n > -1e9 && n < 1e9 && (s <= 0 || n >= 0) && (s >= 0 || n <= 0)
	maxS := int64(fuzzLimits.MaxLeaseTTL / time.Second)
	return wellFormed && (s > 0 || s == 0 && n > 0) && (s < maxS || s == maxS && n == 0) && n%1000 == 0
}

func (r fuzzRequest) lease() *durationpb.Duration {
	if !r.hasLease {
		return nil
	}
	return &durationpb.Duration{Seconds: r.leaseSeconds, Nanos: r.leaseNanos}
}

// build builds the request the method takes.
func (r fuzzRequest) build() proto.Message {
	switch r.method {
	case 0:
		return &dedupv1.ClaimRequest{Consumer: r.consumer, Key: r.key, Digest: r.digest, LeaseTtl: r.lease(), Owner: r.owner}
	case 1:
		return &dedupv1.CompleteRequest{Consumer: r.consumer, Key: r.key, FencingToken: r.token, Result: r.result}
	case 2:
		return &dedupv1.RejectRequest{Consumer: r.consumer, Key: r.key, FencingToken: r.token,
			Reason: r.reason, Message: r.message, Detail: r.detail, Retryable: r.retryable}
	case 3:
		return &dedupv1.ExtendLeaseRequest{Consumer: r.consumer, Key: r.key, FencingToken: r.token, LeaseTtl: r.lease()}
	}
	return &dedupv1.LookupRequest{Consumer: r.consumer, Key: r.key}
}

// requestFields is the inverse of build, for requests decoded from the
// wire.
func requestFields(m proto.Message) fuzzRequest {
	lease := func(d *durationpb.Duration) (bool, int64, int32) {
		return d != nil, d.GetSeconds(), d.GetNanos()
	}
	switch m := m.(type) {
	case *dedupv1.ClaimRequest:
		r := fuzzRequest{method: 0, consumer: m.GetConsumer(), key: m.GetKey(), digest: m.GetDigest(), owner: m.GetOwner()}
		r.hasLease, r.leaseSeconds, r.leaseNanos = lease(m.GetLeaseTtl())
		return r
	case *dedupv1.CompleteRequest:
		return fuzzRequest{method: 1, consumer: m.GetConsumer(), key: m.GetKey(), token: m.GetFencingToken(), result: m.GetResult()}
	case *dedupv1.RejectRequest:
		return fuzzRequest{method: 2, consumer: m.GetConsumer(), key: m.GetKey(), token: m.GetFencingToken(),
			reason: m.GetReason(), message: m.GetMessage(), detail: m.GetDetail(), retryable: m.GetRetryable()}
	case *dedupv1.ExtendLeaseRequest:
		r := fuzzRequest{method: 3, consumer: m.GetConsumer(), key: m.GetKey(), token: m.GetFencingToken()}
		r.hasLease, r.leaseSeconds, r.leaseNanos = lease(m.GetLeaseTtl())
		return r
	case *dedupv1.LookupRequest:
		return fuzzRequest{method: 4, consumer: m.GetConsumer(), key: m.GetKey()}
	}
	panic("unknown request type")
}

// call runs the handler of the request's method.
func call(s *DedupService, m proto.Message) error {
	ctx := context.Background()
	var err error
	switch m := m.(type) {
	case *dedupv1.ClaimRequest:
		_, err = s.Claim(ctx, m)
	case *dedupv1.CompleteRequest:
		_, err = s.Complete(ctx, m)
	case *dedupv1.RejectRequest:
		_, err = s.Reject(ctx, m)
	case *dedupv1.ExtendLeaseRequest:
		_, err = s.ExtendLease(ctx, m)
	case *dedupv1.LookupRequest:
		_, err = s.Lookup(ctx, m)
	}
	return err
}

// checkPassedThrough: the store got the request's values unchanged.
func (r fuzzRequest) checkPassedThrough(t *testing.T, cmd any) {
	t.Helper()
	var ttl time.Duration
	if r.hasLease {
		ttl = r.lease().AsDuration()
	}
	var want any
	switch r.method {
	case 0:
		want = store.ClaimParams{Consumer: r.consumer, Key: r.key, Digest: r.digest, LeaseTTL: ttl, Owner: r.owner, Policy: testPolicy}
	case 1:
		want = store.CompleteParams{Consumer: r.consumer, Key: r.key, FencingToken: r.token, Result: r.result, Policy: testPolicy}
	case 2:
		want = store.RejectParams{Consumer: r.consumer, Key: r.key, FencingToken: r.token, Policy: testPolicy,
			Rejection: store.Rejection{Reason: r.reason, Message: r.message, Detail: r.detail, Retryable: r.retryable}}
	case 3:
		want = store.ExtendLeaseParams{Consumer: r.consumer, Key: r.key, FencingToken: r.token, LeaseTTL: ttl, Policy: testPolicy}
	default:
		want = [2]string{r.consumer, r.key}
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Fatalf("store got %+v, want %+v", cmd, want)
	}
}

// recordingStore answers every call with an empty record and remembers
// what it was asked; validation tests need nothing more from a store.
type recordingStore struct {
	store.Store // DeleteExpired, Ping and Close are never called here
	calls       int
	cmd         any
}

func (s *recordingStore) record(cmd any) { s.calls++; s.cmd = cmd }

// GetPolicy finds no policy, so the server defaults apply; policy reads are
// not the calls these tests count.
func (s *recordingStore) GetPolicy(context.Context, string) (store.ConsumerPolicy, error) {
	return store.ConsumerPolicy{}, store.ErrNoPolicy
}

// fuzzService is a DedupService over st with the fuzz limits as its
// defaults and no policy cache, so every call reads st's (absent) policy.
func fuzzService(st *recordingStore) *DedupService {
	policies := policy.NewKeys(st, policy.Defaults{Policy: testPolicy, Limits: fuzzLimits}, 0)
	return NewDedupService(st, policies, slog.New(slog.DiscardHandler))
}

func (s *recordingStore) Claim(_ context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	s.record(p)
	return store.ClaimResult{Outcome: store.Acquired, Record: store.Record{Consumer: p.Consumer, Key: p.Key}}, nil
}

func (s *recordingStore) Complete(_ context.Context, p store.CompleteParams) (store.Record, error) {
	s.record(p)
	return store.Record{}, nil
}

func (s *recordingStore) Reject(_ context.Context, p store.RejectParams) (store.Record, error) {
	s.record(p)
	return store.Record{}, nil
}

func (s *recordingStore) ExtendLease(_ context.Context, p store.ExtendLeaseParams) (store.Record, error) {
	s.record(p)
	return store.Record{}, nil
}

func (s *recordingStore) Lookup(_ context.Context, consumer, key string) (store.Record, error) {
	s.record([2]string{consumer, key})
	return store.Record{}, nil
}

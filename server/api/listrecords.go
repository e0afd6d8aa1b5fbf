package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// Page sizes of ListRecords. A larger page_size is cut to the maximum, as
// Google's API guidelines (AIP-158) ask, rather than refused.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

var stateFromProto = map[dedupv1.State]store.State{
	dedupv1.State_STATE_PENDING:   store.Pending,
	dedupv1.State_STATE_COMPLETED: store.Completed,
	dedupv1.State_STATE_REJECTED:  store.Rejected,
	dedupv1.State_STATE_RELEASED:  store.Released,
}

// ListRecords pages through one consumer's live records in key order. Each
// page is keyset queries on the store (keys after the last one of the
// previous page), so a page costs the same however deep it is, and a
// record that stays live throughout is listed exactly once however many
// are inserted or deleted meanwhile. A page ends at page_size records or
// where the page byte budget runs out (listPage).
func (s *DedupService) ListRecords(ctx context.Context, req *dedupv1.ListRecordsRequest) (*dedupv1.ListRecordsResponse, error) {
	params, err := listParams(req)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	policy, err := s.policies.For(ctx, req.GetConsumer())
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	page := listPage{
		store:  s.store,
		params: params,
		basic:  req.GetView() == dedupv1.RecordView_RECORD_VIEW_BASIC,
		budget: pageBytes(s.policies.Defaults().Limits),
	}
	page.chunk = chunkSize(page.budget, policy.MaxResultBytes, params.Limit)
	resp, err := page.read(ctx)
	if err != nil {
		return nil, s.fail(ctx, err, req.GetConsumer(), "")
	}
	if after := resp.GetNextPageToken(); after != "" {
		resp.NextPageToken = pageToken{AfterKey: after, Filter: filterHash(req)}.encode()
	}
	return resp, nil
}

// listParams validates a ListRecords request and turns it into the store's
// parameters, continuing from the page token if there is one.
func listParams(req *dedupv1.ListRecordsRequest) (store.ListParams, error) {
	var v validator
	v.consumer(req.GetConsumer())
	p := store.ListParams{
		Consumer:     req.GetConsumer(),
		States:       v.states("states", req.GetStates()),
		KeyPrefix:    req.GetKeyPrefix(),
		LeaseExpired: req.GetLeaseExpired(),
		Limit:        DefaultPageSize,
	}
	v.text("key_prefix", req.GetKeyPrefix(), MaxKeyBytes)
	p.CreatedAfter, p.CreatedBefore = v.timeRange("created", req.GetCreatedAfter(), req.GetCreatedBefore())
	p.UpdatedAfter, p.UpdatedBefore = v.timeRange("updated", req.GetUpdatedAfter(), req.GetUpdatedBefore())
	if p.LeaseExpired && len(p.States) > 0 && !slices.Contains(p.States, store.Pending) {
		v.fail("lease_expired", "lists PENDING records only, but states leaves PENDING out")
	}
	switch size := req.GetPageSize(); {
	case size < 0:
		v.fail("page_size", "must not be negative, got %d", size)
	case size > 0:
		p.Limit = min(int(size), MaxPageSize)
	}
	if tok := req.GetPageToken(); tok != "" {
		t, ok := decodePageToken(tok)
		switch {
		case !ok:
			v.fail("page_token", "is not a token this server issued")
		case t.Filter != filterHash(req):
			v.fail("page_token", "was issued for other filters; pass the same filters as the first page, or no token")
		default:
			p.AfterKey = t.AfterKey
		}
	}
	return p, v.result()
}

// states converts a states filter; empty means every state.
func (v *validator) states(field string, states []dedupv1.State) []store.State {
	var out []store.State
	for _, st := range states {
		s, ok := stateFromProto[st]
		if !ok {
			v.fail(field, "holds %v, which is not a state a record can be in", st)
			return nil
		}
		out = append(out, s)
	}
	return out
}

// timeRange checks a [<name>_after, <name>_before) pair; unset ends are
// zero times, which the store reads as "no bound".
func (v *validator) timeRange(name string, after, before *timestamppb.Timestamp) (time.Time, time.Time) {
	a := v.timestamp(name+"_after", after)
	b := v.timestamp(name+"_before", before)
	if !a.IsZero() && !b.IsZero() && !b.After(a) {
		v.fail(name+"_before", "must be later than %s_after", name)
	}
	return a, b
}

func (v *validator) timestamp(field string, ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	if err := ts.CheckValid(); err != nil {
		v.fail(field, "is not a valid timestamp: %v", err)
		return time.Time{}
	}
	return ts.AsTime()
}

// pageToken is what a next_page_token holds. It is opaque to callers, and
// not secret: a forged one can only list the caller's own consumer from
// another key.
type pageToken struct {
	AfterKey string `json:"k"`
	// Filter is filterHash of the request that issued the token.
	Filter string `json:"f"`
}

func (t pageToken) encode() string {
	b, _ := json.Marshal(t) // a struct of two strings always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(s string) (pageToken, bool) {
	var t pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	// The key is checked as a request's key is: a forged token is the
	// caller's input like any other, and the store must never see a key
	// no request may carry (PostgreSQL's TEXT refuses NUL).
	if err != nil || json.Unmarshal(b, &t) != nil || !validKey(t.AfterKey) || t.Filter == "" {
		return pageToken{}, false
	}
	return t, true
}

// filterHash identifies a request's filters, so that a token is refused
// with other filters, under which its key would be no place to continue
// from. page_size may change between pages and is left out, as is the
// order of states.
func filterHash(req *dedupv1.ListRecordsRequest) string {
	states := make([]string, len(req.GetStates()))
	for i, s := range req.GetStates() {
		states[i] = s.String()
	}
	slices.Sort(states)
	states = slices.Compact(states)
	stamp := func(ts *timestamppb.Timestamp) string {
		if ts == nil {
			return "-"
		}
		return fmt.Sprintf("%d.%09d", ts.GetSeconds(), ts.GetNanos())
	}
	canonical := strings.Join([]string{
		req.GetConsumer(), strings.Join(states, ","), req.GetKeyPrefix(),
		stamp(req.GetCreatedAfter()), stamp(req.GetCreatedBefore()),
		stamp(req.GetUpdatedAfter()), stamp(req.GetUpdatedBefore()),
		fmt.Sprint(req.GetLeaseExpired()),
	}, "\x00")
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

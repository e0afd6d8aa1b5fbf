package auth

import (
	"errors"
	"testing"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// StreamService follows DedupService's rule (the credential must cover the
// consumer) and StreamAdminService AdminService's (admin only).
func TestAuthorizeStreams(t *testing.T) {
	orders := &Grant{Name: "orders-worker", Consumers: []string{"orders"}}
	admin := &Grant{Name: "ops", Admin: true}
	for _, tc := range []struct {
		grant    *Grant
		method   string
		consumer string
		allowed  bool
	}{
		{orders, "/dedup.v1.StreamService/ClaimStream", "orders", true},
		{orders, "/dedup.v1.StreamService/ClaimStream", "payments", false},
		{orders, "/dedup.v1.StreamService/ListStreams", "payments", false},
		{orders, "/dedup.v1.StreamAdminService/ResetStream", "orders", false},
		{admin, "/dedup.v1.StreamAdminService/ResetStream", "orders", true},
		{admin, "/dedup.v1.StreamService/ClaimStream", "orders", false},
	} {
		err := authorize(tc.grant, tc.method, tc.consumer)
		if got := err == nil; got != tc.allowed || (err != nil && !errors.Is(err, rpcerrors.ErrPermissionDenied)) {
			t.Errorf("%s calling %s for %q: %v, want allowed %v", tc.grant.Name, tc.method, tc.consumer, err, tc.allowed)
		}
	}
}

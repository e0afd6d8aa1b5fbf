// Package api serves dedup.v1's four gRPC services: DedupService (claims
// and their outcomes, one key or a batch at a time), AdminService
// (policies, records, purges, stats), StreamService (ordered streams: one
// high-water mark per entity) and StreamAdminService (marks set by hand,
// stream listings and stream policies). Each handler validates its request
// before any store work, resolves the policy in force, calls the store, and
// turns every outcome into its wire form. Errors go to the wire through
// server/rpcerrors, the vocabulary this package shares with the
// interceptors.
package api

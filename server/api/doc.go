// Package api serves dedup.v1's four gRPC services: DedupService (claims
// and their outcomes, one key or a batch at a time), AdminService
// (policies, records, purges, stats), StreamService (ordered streams: one
// high-water mark per entity) and StreamAdminService (marks set by hand,
// stream listings and stream policies). Each handler validates its request
// before any store work, resolves the policy in force through the
// process's shared resolvers (server/policy), calls the store, and
// turns every outcome into its wire form. Every handler's errors take one
// path (failWith, fail.go): the store's errors are mapped to statuses here
// (status.go), over the store's one list of refusals, and the rest by
// server/rpcerrors, the vocabulary this package shares with the
// interceptors.
package api

// Package policy resolves the policy in force for a consumer: its stored
// key policy and stream policy, with the server's defaults (the serve
// flags) filling whatever a stored policy leaves unset. The handlers in
// server/api and the background jobs in server/jobs resolve through the
// same resolvers, built once per process (NewResolvers), so a change made
// through the API and invalidated here is what every part of the process
// applies from its next call; a change made through another replica is
// seen within the cache bound (--policy-cache-ttl).
package policy

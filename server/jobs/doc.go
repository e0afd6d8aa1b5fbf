// Package jobs is dedupd's background work, each job run on one ticker
// loop (every) until its context ends: the reaper, which deletes expired
// records and streams and runs park mode's gap watch on each pass; the
// lease sampler, which sums up the claims in flight for the lease
// metrics; and the health watcher, which judges the store by its pings
// and by the outcome of its writes and sets the gRPC health status. The
// jobs work through the decorated store, so what they do is counted and
// traced like any call, and resolve policies through the process's shared
// resolvers (server/policy), so a change made through the API reaches
// them at once.
package jobs

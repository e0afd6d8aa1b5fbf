package policy

import "time"

// Reader reads both kinds of stored policy.
type Reader interface {
	KeyPolicyReader
	StreamPolicyReader
}

// Resolvers are a process's policy resolvers. Build them once and hand the
// same ones to every handler and job: Invalidate reaches only the resolver
// it is called on, so a second resolver would go on serving a policy
// changed through the API until its cache bound.
type Resolvers struct {
	Keys    *Keys
	Streams *Streams
}

// NewResolvers returns resolvers reading stored policies from st, filling
// what they leave unset from d and, for a stream's TTL, streamTTL (zero:
// store.DefaultStreamTTL); each caches for at most cacheTTL.
func NewResolvers(st Reader, d Defaults, streamTTL, cacheTTL time.Duration) Resolvers {
	keys := NewKeys(st, d, cacheTTL)
	return Resolvers{Keys: keys, Streams: NewStreams(st, keys, streamTTL, cacheTTL)}
}

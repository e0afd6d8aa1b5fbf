package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/dedupdconn"
)

// connOptions are the global flags that decide how dedupctl reaches
// dedupd: the address, TLS and the bearer token (internal/dedupdconn,
// shared with `dedupd gateway`).
type connOptions struct{ dedupdconn.Flags }

func (o *connOptions) register(flags *pflag.FlagSet) { o.Register(flags, "DEDUPCTL") }

// dial builds the client with retries off: each dedupctl call is one
// attempt, its failure reported as it is. Mistakes in the flags are usage
// errors.
func (o *connOptions) dial() (*client.Client, error) {
	c, err := o.Dial(client.WithRetries(0))
	if usage, ok := errors.AsType[*dedupdconn.UsageError](err); ok {
		return nil, usageError{usage.Err}
	}
	return c, err
}

// describeTarget is the server address as shown in messages.
func (o *connOptions) describeTarget() string { return o.Describe() }

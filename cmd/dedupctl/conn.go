package main

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/loopback"
)

// connOptions are the global flags that decide how dedupctl reaches
// dedupd: the address, TLS and the bearer token.
type connOptions struct {
	server string
	// token is sent as "authorization: Bearer <token>" on every call. It is
	// never printed.
	token string
	// insecureToken allows the token over plaintext to a server that is
	// not on loopback.
	insecureToken bool
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
}

func (o *connOptions) register(flags *pflag.FlagSet) {
	flags.StringVar(&o.server, "server", "127.0.0.1:7070", "dedupd gRPC address (env DEDUPCTL_SERVER)")
	flags.StringVar(&o.token, "token", "", "bearer token sent as 'authorization: Bearer <token>' (env DEDUPCTL_TOKEN); never printed")
	flags.BoolVar(&o.insecureToken, "insecure-token", false, "allow --token over plaintext to a server that is not on loopback")
	flags.BoolVar(&o.tls, "tls", false, "connect with TLS, verifying the server against the system roots")
	flags.StringVar(&o.tlsCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (implies --tls)")
	flags.StringVar(&o.tlsCert, "tls-cert", "", "PEM client certificate for mutual TLS (with --tls-key; implies --tls)")
	flags.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	flags.StringVar(&o.tlsServerName, "tls-server-name", "", "name to verify the server's certificate against, when it differs from the --server host (implies --tls)")
}

// useTLS reports whether any TLS flag was given.
func (o *connOptions) useTLS() bool {
	return o.tls || o.tlsCA != "" || o.tlsCert != "" || o.tlsKey != "" || o.tlsServerName != ""
}

// dial builds the client through client.New (with retries off: each
// dedupctl call is one attempt, its failure reported as it is); it does not
// connect yet (gRPC connects on the first call). Mistakes in the flags are
// usage errors.
func (o *connOptions) dial() (*client.Client, error) {
	if o.server == "" {
		return nil, usagef("--server is empty")
	}
	opts := []client.Option{client.WithRetries(0)}
	if o.useTLS() {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLS(cfg))
		if o.tlsServerName != "" {
			opts = append(opts, client.WithTLSServerName(o.tlsServerName))
		}
	}
	if o.token != "" {
		// client.New refuses the same; checked here to name the flags.
		if !o.useTLS() && !o.insecureToken && !loopback.Target(o.server) {
			return nil, usagef("--token would be sent in the clear to %s: use --tls, or --insecure-token if the network is trusted", o.server)
		}
		opts = append(opts, client.WithBearerToken(o.token))
		if o.insecureToken {
			opts = append(opts, client.WithInsecureToken())
		}
	}
	c, err := client.New(o.server, opts...)
	if err != nil {
		return nil, usagef("--server %q: %v", o.server, err)
	}
	return c, nil
}

// tlsConfig is the client TLS configuration from the --tls-* flags (the
// server name goes separately, as client.WithTLSServerName).
func (o *connOptions) tlsConfig() (*tls.Config, error) {
	// Checked before any file is read, so the message names the flags.
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	cfg, err := client.LoadTLSConfig(o.tlsCA, o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, usagef("--tls-ca/--tls-cert/--tls-key: %v", err)
	}
	return cfg, nil
}

// describeTarget is the server address as shown in messages.
func (o *connOptions) describeTarget() string {
	if o.useTLS() {
		return fmt.Sprintf("%s (TLS)", o.server)
	}
	return o.server
}

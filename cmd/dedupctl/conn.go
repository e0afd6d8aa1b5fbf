package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dedupd/dedupd/client"
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

// dial builds the client connection; it does not connect yet (gRPC
// connects on the first call). Mistakes in the flags are usage errors.
func (o *connOptions) dial() (*grpc.ClientConn, error) {
	if o.server == "" {
		return nil, usagef("--server is empty")
	}
	transport := insecure.NewCredentials()
	if o.useTLS() {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		transport = credentials.NewTLS(cfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	if o.token != "" {
		if !o.useTLS() && !o.insecureToken && !isLoopback(o.server) {
			return nil, usagef("--token would be sent in the clear to %s: use --tls, or --insecure-token if the network is trusted", o.server)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken{token: o.token, requireTLS: o.useTLS()}))
	}
	conn, err := grpc.NewClient(o.server, opts...)
	if err != nil {
		return nil, usagef("--server %q: %v", o.server, err)
	}
	return conn, nil
}

// tlsConfig is the client TLS configuration from the --tls-* flags: the
// Go client's, with the server name dedupctl may override.
func (o *connOptions) tlsConfig() (*tls.Config, error) {
	// Checked before any file is read, so the message names the flags.
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	cfg, err := client.LoadTLSConfig(o.tlsCA, o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, usagef("--tls-ca/--tls-cert/--tls-key: %v", err)
	}
	cfg.ServerName = o.tlsServerName
	return cfg, nil
}

// isLoopback reports whether a gRPC target names this machine, where a
// plaintext token does not cross a network.
func isLoopback(target string) bool {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearerToken is per-RPC credentials carrying a static bearer token.
type bearerToken struct {
	token      string
	requireTLS bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity makes gRPC refuse to send the token over a
// plaintext connection when TLS was asked for; a plaintext token was
// allowed explicitly by dial.
func (b bearerToken) RequireTransportSecurity() bool { return b.requireTLS }

// String keeps the token out of any log or error that prints the value.
func (bearerToken) String() string { return "bearer token (redacted)" }

// GoString is String for %#v.
func (b bearerToken) GoString() string { return b.String() }

var _ credentials.PerRPCCredentials = bearerToken{}

// describeTarget is the server address as shown in messages.
func (o *connOptions) describeTarget() string {
	if o.useTLS() {
		return fmt.Sprintf("%s (TLS)", o.server)
	}
	return o.server
}

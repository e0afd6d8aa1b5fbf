// Package dedupdconn holds the flags that say how a command reaches dedupd
// as a client (the address, TLS, the bearer token), and the dialling that
// checks them, so that dedupctl and `dedupd gateway` take the same flags
// with the same rules.
package dedupdconn

import (
	"crypto/tls"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/loopback"
)

// Flags are the connection flags.
type Flags struct {
	Server string
	// Token is sent as "authorization: Bearer <token>" on every call. It is
	// never printed.
	Token string
	// InsecureToken allows the token over plaintext to a server that is
	// not on loopback.
	InsecureToken bool
	TLS           bool
	TLSCA         string
	TLSCert       string
	TLSKey        string
	TLSServerName string
}

// UsageError is a mistake in the flags.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// AddrEnv is the one environment variable every program and example that
// calls dedupd reads its address from; DefaultAddr is the address when it
// is unset (dedupd serve's default --listen).
const (
	AddrEnv     = "DEDUPD_ADDR"
	DefaultAddr = "127.0.0.1:7070"
)

// ServerFlag is the one name of the address flag. The commands' older
// names stay as aliases (see Alias).
const ServerFlag = "server"

// Register adds the flags to flags; env is the prefix of the environment
// variables the command reads them from (DEDUPCTL gives DEDUPCTL_TOKEN),
// named in the help. The address comes from AddrEnv first (ApplyAddrEnv),
// then from env_SERVER, the older name kept as an alias.
func (o *Flags) Register(flags *pflag.FlagSet, env string) {
	RegisterServer(flags, &o.Server, env+"_SERVER")
	flags.StringVar(&o.Token, "token", "", "bearer token sent as 'authorization: Bearer <token>' (env "+env+"_TOKEN); never printed")
	flags.BoolVar(&o.InsecureToken, "insecure-token", false, "allow --token over plaintext to a server that is not on loopback")
	flags.BoolVar(&o.TLS, "tls", false, "connect with TLS, verifying the server against the system roots")
	flags.StringVar(&o.TLSCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (implies --tls)")
	flags.StringVar(&o.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS (with --tls-key; implies --tls)")
	flags.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	flags.StringVar(&o.TLSServerName, "tls-server-name", "", "name to verify the server's certificate against, when it differs from the --server host (implies --tls)")
}

// RegisterServer adds --server, stored in p, with the default DefaultAddr;
// legacyEnv names the older variable the help lists as an alias.
func RegisterServer(flags *pflag.FlagSet, p *string, legacyEnv string) {
	flags.StringVar(p, ServerFlag, DefaultAddr, "dedupd gRPC address (env "+AddrEnv+"; "+legacyEnv+" is an older alias)")
}

// ApplyAddrEnv sets --server from AddrEnv unless the command line gave it.
// Call it before envflags.Apply: a flag set here counts as given, so that
// AddrEnv wins over the command's older variable. A flag set without
// --server is left alone.
func ApplyAddrEnv(flags *pflag.FlagSet) error {
	f := flags.Lookup(ServerFlag)
	v, ok := os.LookupEnv(AddrEnv)
	if f == nil || f.Changed || !ok {
		return nil
	}
	if v == "" {
		return fmt.Errorf("%s is set but empty", AddrEnv)
	}
	return flags.Set(ServerFlag, v)
}

// Alias makes --old another name of --server (for a command that called
// it --old before); pass it to the flag set's SetNormalizeFunc. Flags are
// normalized where they are defined and where they are parsed, so the
// alias is accepted and never listed twice.
func Alias(old string) func(*pflag.FlagSet, string) pflag.NormalizedName {
	return func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == old {
			name = ServerFlag
		}
		return pflag.NormalizedName(name)
	}
}

// UseTLS reports whether any TLS flag was given.
func (o *Flags) UseTLS() bool {
	return o.TLS || o.TLSCA != "" || o.TLSCert != "" || o.TLSKey != "" || o.TLSServerName != ""
}

// Dial builds the client through client.New with the flags' options after
// opts; it does not connect yet (gRPC connects on the first call).
// Mistakes in the flags are *UsageError.
func (o *Flags) Dial(opts ...client.Option) (*client.Client, error) {
	if o.Server == "" {
		return nil, usagef("--server is empty")
	}
	opts = append([]client.Option{}, opts...)
	if o.UseTLS() {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLS(cfg))
		if o.TLSServerName != "" {
			opts = append(opts, client.WithTLSServerName(o.TLSServerName))
		}
	}
	if o.Token != "" {
		// client.New refuses the same; checked here to name the flags.
		if !o.UseTLS() && !o.InsecureToken && !loopback.Target(o.Server) {
			return nil, usagef("--token would be sent in the clear to %s: use --tls, or --insecure-token if the network is trusted", o.Server)
		}
		opts = append(opts, client.WithBearerToken(o.Token))
		if o.InsecureToken {
			opts = append(opts, client.WithInsecureToken())
		}
	}
	c, err := client.New(o.Server, opts...)
	if err != nil {
		return nil, usagef("--server %q: %v", o.Server, err)
	}
	return c, nil
}

// tlsConfig is the client TLS configuration from the --tls-* flags (the
// server name goes separately, as client.WithTLSServerName).
func (o *Flags) tlsConfig() (*tls.Config, error) {
	// Checked before any file is read, so the message names the flags.
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	cfg, err := client.LoadTLSConfig(o.TLSCA, o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, usagef("--tls-ca/--tls-cert/--tls-key: %v", err)
	}
	return cfg, nil
}

// Describe is the server address as shown in messages.
func (o *Flags) Describe() string {
	if o.UseTLS() {
		return fmt.Sprintf("%s (TLS)", o.Server)
	}
	return o.Server
}

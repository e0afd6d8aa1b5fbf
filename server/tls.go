package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// certReloader serves TLS with certificate files it can read again on
// SIGHUP: every handshake takes the configuration in force at that moment,
// so rotating a certificate needs no restart and drops no connection.
type certReloader struct {
	certFile, keyFile, clientCAFile string
	current                         atomic.Pointer[tls.Config]
}

func newCertReloader(certFile, keyFile, clientCAFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, clientCAFile: clientCAFile}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads the files again; on error the configuration in force stays.
func (r *certReloader) reload() error {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2"}, // gRPC requires ALPN h2
	}
	if r.clientCAFile != "" {
		pem, err := os.ReadFile(r.clientCAFile)
		if err != nil {
			return fmt.Errorf("reading --tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errors.New("--tls-client-ca holds no PEM certificate")
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	r.current.Store(cfg)
	return nil
}

// configFor is config for a listener that negotiates the given ALPN
// protocols instead of h2 alone (the HTTP listener: h2 and http/1.1).
func (r *certReloader) configFor(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := r.current.Load().Clone()
			cfg.NextProtos = protos
			return cfg, nil
		},
	}
}

// config is the tls.Config given to the gRPC server.
func (r *certReloader) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.current.Load(), nil
		},
	}
}

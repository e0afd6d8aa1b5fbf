package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/dedupdconn"
)

// newProbeCommand is the health probe of an image with no shell or curl
// (FROM scratch): a container HEALTHCHECK or an exec probe runs the binary
// it already has. Kubernetes can use its native gRPC probe instead.
func newProbeCommand() *cobra.Command {
	var addr, service, caFile, serverName string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Ask a dedupd for its gRPC health; exit 0 only when it is SERVING",
		Long: `Ask a running dedupd's grpc.health.v1 service for its status and exit 0
only when the answer is SERVING: for a container HEALTHCHECK or an exec
probe. Health needs no credential. With --tls-ca the call uses TLS and
checks the server's certificate against that CA.

The address is --server, else DEDUPD_ADDR, else 127.0.0.1:7070; --addr is an
older name of --server and DEDUPD_SERVER of DEDUPD_ADDR.`,
		Example: `  dedupd probe
  dedupd probe --server 127.0.0.1:7070 --service dedup.v1.DedupService
  DEDUPD_ADDR=dedupd.internal:7070 dedupd probe
  dedupd probe --tls-ca /etc/dedupd/ca.pem --tls-server-name dedupd.internal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			creds, err := probeCredentials(caFile, serverName)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			status, err := probe(ctx, addr, service, creds)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), status)
			if status != healthpb.HealthCheckResponse_SERVING {
				return errNotServing
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SetNormalizeFunc(dedupdconn.Alias("addr"))
	dedupdconn.RegisterServer(f, &addr, "DEDUPD_SERVER")
	f.StringVar(&service, "service", "", `the service whose health to ask for; "" is the server as a whole`)
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	f.StringVar(&caFile, "tls-ca", "", "PEM file of the CA that signed the server's certificate; TLS when set")
	f.StringVar(&serverName, "tls-server-name", "", "the name the server's certificate must carry (default: the host of --server)")
	return cmd
}

var errNotServing = errors.New("not serving")

func probeCredentials(caFile, serverName string) (credentials.TransportCredentials, error) {
	if caFile == "" {
		return insecure.NewCredentials(), nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", caFile)
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}), nil
}

func probe(ctx context.Context, addr, service string, creds credentials.TransportCredentials) (healthpb.HealthCheckResponse_ServingStatus, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, fmt.Errorf("health check of %s: %w", addr, err)
	}
	return resp.GetStatus(), nil
}

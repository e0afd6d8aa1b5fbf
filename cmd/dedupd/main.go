// Command dedupd is the dedupd server: a gRPC service that records which
// messages, webhooks and API calls have been handled, so that each takes
// effect once however often it is delivered.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dedupd/dedupd/internal/dedupdconn"
	"github.com/dedupd/dedupd/internal/duration"
	"github.com/dedupd/dedupd/internal/envflags"
	"github.com/dedupd/dedupd/internal/loadtest/enginebench"
	"github.com/dedupd/dedupd/internal/version"
)

// Exit status: 0 success, 1 failure, 2 usage error (a bad flag), as
// dedupctl's.
const exitUsage = 2

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dedupd:", err)
		if _, usage := errors.AsType[usageError](err); usage {
			os.Exit(exitUsage)
		}
		os.Exit(1)
	}
}

// usageError is a mistake on the command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "dedupd",
		Short:         "Deduplication and result-caching service over gRPC",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every flag can also come from DEDUPD_<FLAG_NAME>, e.g.
		// DEDUPD_DATABASE_URL; a flag on the command line wins. The
		// address of the dedupd a command calls (--server) comes from
		// DEDUPD_ADDR first, DEDUPD_SERVER being its older alias.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := dedupdconn.ApplyAddrEnv(cmd.Flags()); err != nil {
				return err
			}
			return envflags.Apply(cmd.Flags(), "DEDUPD")
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	var showVersion bool
	var output string
	root.Flags().BoolVar(&showVersion, "version", false, "print the version and exit")
	root.Flags().StringVarP(&output, "output", "o", "text", "format of --version: text or json")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if showVersion {
			return version.Print(cmd.OutOrStdout(), "dedupd", output)
		}
		return cmd.Help()
	}
	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version (module version, VCS revision, Go toolchain)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return version.Print(cmd.OutOrStdout(), "dedupd", output) },
	}
	versionCmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	root.AddCommand(newServeCommand(), newMigrateCommand(), newMigrateStoreCommand(), newProbeCommand(), newGatewayCommand(),
		enginebench.NewCommand(), versionCmd)
	// Every duration flag takes days (7d), as dedupctl's do.
	duration.Adopt(root)
	return root
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&l.format, "log-format", "text", "log format: text or json")
	flags.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
}

func (l *logFlags) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", l.format)
}

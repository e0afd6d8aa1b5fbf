package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/dedupdconn"
	"github.com/dedupd/dedupd/internal/duration"
	"github.com/dedupd/dedupd/internal/envflags"
	"github.com/dedupd/dedupd/internal/loadtest"
	"github.com/dedupd/dedupd/internal/version"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// app is what every command shares: the global flags, the standard
// streams and the connection, made on first use.
type app struct {
	conn    connOptions
	output  string
	timeout time.Duration
	std     stdio
	now     func() time.Time

	client *client.Client
}

// run executes dedupctl with args and returns its exit status. Errors are
// printed here, as one line on stderr.
func run(ctx context.Context, args []string, std stdio) int {
	a := &app{std: std, now: time.Now}
	root := newRootCommand(a)
	root.SetArgs(args)
	root.SetIn(std.in)
	root.SetOut(std.out)
	root.SetErr(std.err)
	cmd, err := root.ExecuteContextC(ctx)
	if a.client != nil {
		a.client.Close()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(std.err, "dedupctl: "+describeError(err, a.conn.describeTarget()))
	code := exitCode(err)
	if code == exitUsage {
		fmt.Fprintf(std.err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "dedupctl",
		Short: "Administer a dedupd server: policies, records, purge, stats",
		Long: `dedupctl administers a running dedupd over gRPC: retention policies per
consumer, listing and deleting stored records, purging in bulk, counts, and
the reconciliation queue of abandoned claims. It never touches the database.

dedupd's address is --server, else DEDUPD_ADDR (the variable every dedupd
program and example reads), else 127.0.0.1:7070. Every other global flag can
also be set as DEDUPCTL_<FLAG>, for example DEDUPCTL_TOKEN; DEDUPCTL_SERVER
is an older alias of DEDUPD_ADDR. A flag on the command line wins.

Exit status: 0 success, 1 the server refused or could not be reached,
2 usage error, 130 interrupted.`,
		Example: `  dedupctl policy set payments --completed-ttl 7d --dry-run
  dedupctl records list payments --state pending
  DEDUPD_ADDR=dedupd.internal:7070 dedupctl --tls stats`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.prepare(cmd) },
	}
	flags := root.PersistentFlags()
	a.conn.register(flags)
	flags.StringVarP(&a.output, "output", "o", "table", "output format: table or json (protojson, one document per command)")
	flags.DurationVar(&a.timeout, "timeout", 30*time.Second, "deadline of each call to dedupd; 0 for none")
	var showVersion bool
	root.Flags().BoolVar(&showVersion, "version", false, "print the version (with -o json, as JSON) and exit")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if showVersion {
			return version.Print(cmd.OutOrStdout(), "dedupctl", a.output)
		}
		return cmd.Help()
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newPolicyCommand(a), newRecordsCommand(a), newStreamsCommand(a), newPurgeCommand(a),
		newStatsCommand(a), newReconcileCommand(a), newCompletionCommand(),
		loadtest.NewCommand(a.dial, func() string { return a.output }))
	duration.Adopt(root)
	return root
}

// prepare reads DEDUPD_ADDR and DEDUPCTL_* and checks the global flags
// before any command.
func (a *app) prepare(cmd *cobra.Command) error {
	if err := dedupdconn.ApplyAddrEnv(cmd.Root().PersistentFlags()); err != nil {
		return usageError{err}
	}
	if err := envflags.Apply(cmd.Root().PersistentFlags(), "DEDUPCTL"); err != nil {
		return usageError{err}
	}
	if a.output != "table" && a.output != "json" {
		return usagef("--output must be table or json, not %q", a.output)
	}
	return nil
}

// dial returns the connection to dedupd (with its credentials), making
// it on first use.
func (a *app) dial() (grpc.ClientConnInterface, error) {
	if a.client == nil {
		c, err := a.conn.dial()
		if err != nil {
			return nil, err
		}
		a.client = c
	}
	return a.client.Conn(), nil
}

func (a *app) admin() (dedupv1.AdminServiceClient, error) {
	conn, err := a.dial()
	if err != nil {
		return nil, err
	}
	return dedupv1.NewAdminServiceClient(conn), nil
}

func (a *app) records() (dedupv1.DedupServiceClient, error) {
	conn, err := a.dial()
	if err != nil {
		return nil, err
	}
	return dedupv1.NewDedupServiceClient(conn), nil
}

// callContext bounds one call by --timeout.
func (a *app) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, a.timeout)
}

func (a *app) jsonOutput() bool { return a.output == "json" }

// printJSON writes m as protojson with the proto field names and every
// field present (zeros too), indented the same way every time: protojson
// varies its whitespace on purpose, json.Indent makes it stable. Counts
// print as numbers (countsAsNumbers).
func (a *app) printJSON(m proto.Message) error {
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = a.std.out.Write(countsAsNumbers(out.Bytes(), countFields(m.ProtoReflect().Descriptor())))
	return err
}

// table is an aligned table on stdout; call Flush when done.
func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(&trimTrailing{w: a.std.out}, 0, 0, 2, ' ', 0)
}

// trimTrailing drops the spaces tabwriter pads an empty last cell with.
type trimTrailing struct {
	w      io.Writer
	spaces int
}

func (t *trimTrailing) Write(p []byte) (int, error) {
	var out []byte
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		}
		for ; t.spaces > 0; t.spaces-- {
			out = append(out, ' ')
		}
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// row writes one tab-separated table row.
func row(w *tabwriter.Writer, cells ...string) {
	escaped := make([]string, len(cells))
	for i, c := range cells {
		escaped[i] = escapeCell(c)
	}
	fmt.Fprintln(w, strings.Join(escaped, "\t"))
}

// errInterruptedAtQuestion is Ctrl-C at a confirmation: nothing changed.
var errInterruptedAtQuestion = interruptedError{"interrupted: nothing changed"}

// confirm asks a yes/no question on the terminal; anything but y or yes
// is no. Ctrl-C (ctx done) while it waits is errInterruptedAtQuestion,
// even if an answer arrives too: dedupctl catches SIGINT, so a read that
// ignored ctx would keep waiting for Enter. The reading goroutine is left
// blocked on stdin then; the process is about to exit.
func (a *app) confirm(ctx context.Context, question string) (bool, error) {
	fmt.Fprintf(a.std.err, "%s [y/N] ", question)
	type reply struct {
		line string
		err  error
	}
	replies := make(chan reply, 1)
	go func() {
		line, err := bufio.NewReader(a.std.in).ReadString('\n')
		replies <- reply{line, err}
	}()
	var r reply
	select {
	case <-ctx.Done():
	case r = <-replies:
	}
	if ctx.Err() != nil || (r.err != nil && r.line == "") {
		fmt.Fprintln(a.std.err) // end the question's line
	}
	if ctx.Err() != nil {
		return false, errInterruptedAtQuestion
	}
	answer := strings.ToLower(strings.TrimSpace(r.line))
	return answer == "y" || answer == "yes", nil
}

// args wraps a cobra argument check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usagef("%v; usage: %s", err, cmd.UseLine())
		}
		return nil
	}
}

// group is a command that only holds subcommands; an unknown subcommand
// is a usage error, no subcommand prints the help.
func group(use, short, example string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usagef("unknown command %q for %q", a[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}

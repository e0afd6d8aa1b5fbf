// Command dedupctl is the operator's CLI for dedupd: it sets retention
// policies per consumer, lists, inspects and deletes stored records, purges
// them in bulk, counts them and shows the reconciliation queue. It speaks
// only gRPC to a running dedupd (dedup.v1.AdminService and
// DedupService.ListRecords), never to the database.
//
// Exit status: 0 on success, 1 when the server refused or could not be
// reached, 2 for a usage error (bad flag, argument or value), 130 when
// interrupted (Ctrl-C).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], terminalStdio())
	stop()
	os.Exit(code)
}

// stdio is where a command reads and writes, and what kind of terminal they
// are; tests substitute buffers and choose the terminal flags.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
	// interactive is true when stdin and stderr are a terminal: dedupctl may
	// then ask for confirmation.
	interactive bool
	// progressBar is true when stderr is a terminal: purge then redraws one
	// progress line instead of printing a line per batch.
	progressBar bool
}

func terminalStdio() stdio {
	tty := func(f *os.File) bool {
		return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
	}
	return stdio{
		in: os.Stdin, out: os.Stdout, err: os.Stderr,
		interactive: tty(os.Stdin) && tty(os.Stderr),
		progressBar: tty(os.Stderr),
	}
}

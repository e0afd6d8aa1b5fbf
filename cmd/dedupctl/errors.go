package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Exit statuses. Scripts can tell a mistake in the command line (2) from a
// refusal or failure of the server (1).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError is a mistake in the command line: a bad flag, argument or
// value. It exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// interruptedError is a command stopped by Ctrl-C after it had reported
// what it had done. It exits with status 130.
type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return e.msg }

// errAborted is the answer "no" to a confirmation.
var errAborted = errors.New("aborted: nothing changed")

// exitCode is the exit status for an error returned by a command.
func exitCode(err error) int {
	var usage usageError
	var interrupted interruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &interrupted):
		return exitInterrupted
	case isCobraUsage(err):
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises the errors cobra itself returns for an unknown
// command; its flag and argument errors are wrapped in usageError where
// the commands are built.
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command") ||
		strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.HasPrefix(err.Error(), "unknown shorthand flag")
}

// describeError is the one line printed after "dedupctl: " for an error. A
// gRPC error shows the ErrorInfo reason of dedupd (RECORD_NOT_FOUND: ...),
// or, without one, the gRPC code and what to check. A refused credential
// gets a hint where to put a better one, whether dedupd's auth or a proxy
// in front of it refused.
func describeError(err error, server string) string {
	s, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	msg := s.Message()
	line := codeName(s.Code()) + ": " + msg
	if info := errorInfo(s); info != nil {
		line = info.GetReason() + ": " + msg + subject(info.GetMetadata(), msg)
	}
	switch s.Code() {
	case codes.Unavailable:
		if strings.Contains(msg, "connection refused") {
			return fmt.Sprintf("cannot reach dedupd at %s: connection refused (is it running? set --server or DEDUPD_ADDR)", server)
		}
		if strings.Contains(msg, "server preface") && !strings.HasSuffix(server, "(TLS)") {
			// A TLS server closes a plaintext connection without a word.
			return fmt.Sprintf("cannot reach dedupd at %s: %s (does it serve TLS? use --tls or --tls-ca)", server, msg)
		}
		return fmt.Sprintf("cannot reach dedupd at %s: %s", server, msg)
	case codes.Unauthenticated:
		return line + " (pass a token with --token or DEDUPCTL_TOKEN, or a listed client certificate with --tls-cert/--tls-key)"
	case codes.PermissionDenied:
		return line + " (admin commands need an admin token; records and reconcile a token that covers the consumer)"
	case codes.Unimplemented:
		return fmt.Sprintf("UNIMPLEMENTED: the dedupd at %s does not serve this call: %s", server, msg)
	}
	return line
}

// errorInfo is the status's google.rpc.ErrorInfo, or nil.
func errorInfo(s *status.Status) *errdetails.ErrorInfo {
	for _, d := range s.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// subject names the consumer and key an error is about, from the
// ErrorInfo metadata, unless the message already does.
func subject(meta map[string]string, msg string) string {
	var parts []string
	for _, name := range []string{"consumer", "key"} {
		if v, ok := meta[name]; ok && !strings.Contains(msg, strconv.Quote(v)) {
			parts = append(parts, fmt.Sprintf("%s %q", name, v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// codeName writes a gRPC code as in the gRPC spec: NOT_FOUND, not NotFound.
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

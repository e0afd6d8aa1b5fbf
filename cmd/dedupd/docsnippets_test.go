package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	_ "github.com/dedupd/dedupd/proto/dedup/v1" // registers the services' descriptors
)

// snippetDocs are the pages whose shell snippets a newcomer runs in order
// against one server: the README's quick examples, then the tour.
var snippetDocs = []string{"../../README.md", "../../docs/tour.md"}

// TestDocSnippetsRunInOrder runs every grpcurl, dedupctl and curl command
// of the README and the tour, in the order they appear, against one fresh
// server on the embedded store, as a reader pasting them would: each must
// succeed, so no snippet collides with an earlier one (a reused key with
// another digest, a consumer's policy changed under another's example).
// grpcurl is played by a client built from the same descriptors (reflection
// gives grpcurl no others); curl runs as written, against the server's
// --http-listen address, and must answer 200; commands that need a shell
// ($, pipes) or another server (the gateway's curl, which examples/http
// runs) are left out, and counted.
func TestDocSnippetsRunInOrder(t *testing.T) {
	ctl, err := dedupdproc.Build("github.com/dedupd/dedupd/cmd/dedupctl")
	if err != nil {
		t.Fatal(err)
	}
	p := startDedupd(t, "--data-dir", t.TempDir(), "--http-listen", "127.0.0.1:0")
	conn := p.dial(t)
	ran, skipped := 0, 0
	for _, doc := range snippetDocs {
		for _, cmd := range shellCommands(t, doc) {
			// The docs name the server as $DEDUPD_ADDR, set as a reader
			// following them would have it.
			cmd = strings.ReplaceAll(cmd, "$DEDUPD_ADDR", p.Addr)
			args, ok := splitWords(cmd)
			switch {
			case !ok || strings.ContainsAny(cmd, "$|><`"):
				skipped++
				continue
			case args[0] == "curl" && !strings.Contains(cmd, "127.0.0.1:7080"):
				skipped++ // a call of another server (the gateway's, examples/http runs it)
				continue
			case args[0] == "grpcurl":
				if err := playGRPCurl(conn, args); err != nil {
					t.Errorf("%s: %s\n  %v", doc, cmd, err)
				}
			case args[0] == "dedupctl":
				run := exec.Command(ctl, args[1:]...)
				run.Env = append(os.Environ(), "DEDUPD_ADDR="+p.Addr)
				if out, err := run.CombinedOutput(); err != nil {
					t.Errorf("%s: %s\n  %v\n%s", doc, cmd, err, out)
				}
			case args[0] == "curl":
				if err := runCurl(args, p.HTTPAddr); err != nil {
					t.Errorf("%s: %s\n  %v", doc, cmd, err)
				}
			default:
				continue // go run, dedupd serve, installs: not calls
			}
			ran++
		}
	}
	t.Logf("ran %d commands, left out %d that need a shell or another server", ran, skipped)
	if ran < 20 {
		t.Fatalf("only %d commands ran: the snippets were not found", ran)
	}
}

var fence = regexp.MustCompile("(?s)```sh\n(.*?)```")

// shellCommands returns the commands of a page's sh blocks, continuation
// lines joined and comments cut.
func shellCommands(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, block := range fence.FindAllStringSubmatch(string(raw), -1) {
		joined := strings.ReplaceAll(block[1], "\\\n", " ")
		for line := range strings.SplitSeq(joined, "\n") {
			if i := strings.Index(line, "  #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

// splitWords splits a command line as sh would for the quoting the docs
// use: words apart by spaces, '...' and "..." taken literally.
func splitWords(line string) ([]string, bool) {
	var words []string
	var word strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, quote == 0 && len(words) > 0
}

// playGRPCurl makes the call `grpcurl -plaintext -d JSON ADDR Service/Method`
// describes, the request decoded from JSON as grpcurl does.
func playGRPCurl(conn *grpc.ClientConn, args []string) error {
	var data, target string
	for i := 1; i < len(args); i++ {
		switch {
		case args[i] == "-d" && i+1 < len(args):
			data = args[i+1]
			i++
		case strings.HasPrefix(args[i], "-"):
		case strings.Contains(args[i], "/"):
			target = args[i]
		}
	}
	service, method, ok := strings.Cut(target, "/")
	if !ok {
		return fmt.Errorf("no Service/Method in %q", args)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return err
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return errors.New(service + " is not a service")
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return errors.New("no method " + target)
	}
	in, out := dynamicpb.NewMessage(md.Input()), dynamicpb.NewMessage(md.Output())
	if data != "" {
		if err := protojson.Unmarshal([]byte(data), in); err != nil {
			return fmt.Errorf("request JSON: %w", err)
		}
	}
	return conn.Invoke(context.Background(), "/"+service+"/"+method, in, out)
}

// docsHTTPAddr is the --http-listen address the docs' curl commands name.
const docsHTTPAddr = "127.0.0.1:7080"

// runCurl runs a curl command of the docs as written, but for the address
// (httpAddr for docsHTTPAddr), and fails unless it answers HTTP 200.
func runCurl(args []string, httpAddr string) error {
	argv := make([]string, 0, len(args)+2)
	for _, a := range args[1:] {
		argv = append(argv, strings.ReplaceAll(a, docsHTTPAddr, httpAddr))
	}
	out, err := exec.Command("curl", append(argv, "-w", "\n%{http_code}")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	i := bytes.LastIndexByte(out, '\n')
	if body, code := out[:i], string(out[i+1:]); code != "200" {
		return fmt.Errorf("answered %s, want 200: %s", code, body)
	}
	return nil
}

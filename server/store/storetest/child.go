package storetest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
)

// The kill tests of the embedded stores run their writes in a child
// process, the test binary running the same test again, and kill it -9
// once it says what it acknowledged.

// StartChild runs t's test again as a child process of this test binary,
// with env set to a new directory, which it returns with the child and its
// standard output; the test tells the child by env. It skips under -short.
func StartChild(t *testing.T, env string) (dir string, cmd *exec.Cmd, stdout io.Reader) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir = t.TempDir()
	cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return dir, cmd, stdout
}

// KillChildAfter starts the child (StartChild), waits until the first line
// it prints is want, and kills it -9; it returns the child's directory,
// where what it acknowledged must be found.
func KillChildAfter(t *testing.T, env, want string) string {
	t.Helper()
	dir, cmd, stdout := StartChild(t, env)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != want+"\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child said %q (%v), want %q", line, err, want)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its exit status says only that
	return dir
}

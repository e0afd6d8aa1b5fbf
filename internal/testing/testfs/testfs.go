// Package testfs puts files into states that tests need and a test process
// cannot otherwise reach, such as a file its own user may not write.
package testfs

import (
	"os"
	"os/exec"
	"testing"
)

// MakeReadOnly takes write permission away from file until the test ends.
// Root ignores permission bits, so as root it also sets the immutable
// attribute (chattr +i), which the kernel enforces for root too, and clears
// it at cleanup. It fails the test if the file can still be opened for
// writing.
func MakeReadOnly(t testing.TB, file string) {
	t.Helper()
	if err := os.Chmod(file, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", file).CombinedOutput(); err != nil {
			t.Fatalf("testfs: running as root, and chattr +i %s failed (%v: %s): cannot make the file read-only here", file, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("chattr", "-i", file).CombinedOutput(); err != nil {
				t.Errorf("testfs: chattr -i %s: %v: %s", file, err, out)
			}
		})
	}
	if f, err := os.OpenFile(file, os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Fatalf("testfs: %s can still be opened for writing", file)
	}
}

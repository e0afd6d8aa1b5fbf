// Command testpki makes a throwaway CA, server and client certificate for
// the Python and Node client tests, which have no X.509 library to hand:
//
//	go run ./client/dedupdtest/testpki DIR
//
// writes the PEM files into DIR (made if missing) and prints their paths
// and the client certificate's subject as one JSON object (see
// dedupdtest.PKI). The keys are made afresh on every run and live only in
// DIR, a temporary directory of the test.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dedupd/dedupd/client/dedupdtest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testpki DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "testpki:", err)
		os.Exit(1)
	}
	pki, err := dedupdtest.NewPKI(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testpki:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(pki); err != nil {
		fmt.Fprintln(os.Stderr, "testpki:", err)
		os.Exit(1)
	}
}

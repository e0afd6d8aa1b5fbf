package server

import (
	"fmt"
	"strings"
)

// databaseSchemes are the URL schemes of the databases dedupd supports
// (PostgreSQL and CockroachDB both speak PostgreSQL's protocol and take
// its URLs).
var databaseSchemes = []string{"postgres", "postgresql"}

// checkDatabaseURL refuses a URL of a database dedupd does not support
// (mysql://, sqlite://) naming those it does, before the driver reads it
// as something else. A keyword/value string (host=... dbname=...) has no
// scheme and is left to the driver. The URL is never echoed: it may hold
// a password.
func checkDatabaseURL(url string) error {
	scheme, _, ok := strings.Cut(url, "://")
	if !ok {
		return nil
	}
	for _, s := range databaseSchemes {
		if strings.EqualFold(scheme, s) {
			return nil
		}
	}
	return fmt.Errorf("--database-url: scheme %q is not supported: dedupd stores in PostgreSQL or CockroachDB "+
		"(postgres:// or postgresql://), or, with no --database-url, in its embedded store", clipScheme(scheme))
}

// clipScheme bounds the echoed scheme, which the operator typed.
func clipScheme(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// Package envflags sets command-line flags from the environment, the one
// rule both commands (dedupd: DEDUPD_<FLAG>, dedupctl: DEDUPCTL_<FLAG>)
// follow.
package envflags

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Name is the environment variable that sets flag under prefix, e.g.
// Name("DEDUPD", "database-url") is DEDUPD_DATABASE_URL.
func Name(prefix, flag string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets every flag not given on the command line from its variable
// (see Name) when that is set. A flag on the command line wins. Defaults
// are left alone, so that --help never shows a value (a token, a database
// URL with a password) taken from the environment. The error names the
// variable and the kind of value it needs, never the value: it may be a
// secret.
func Apply(flags *pflag.FlagSet, prefix string) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		name := Name(prefix, f.Name)
		v, ok := os.LookupEnv(name)
		if err != nil || f.Changed || !ok {
			return
		}
		if flags.Set(f.Name, v) != nil {
			err = fmt.Errorf("%s: not a valid %s value for --%s", name, f.Value.Type(), f.Name)
		}
	})
	return err
}

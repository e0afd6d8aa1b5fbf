package envflags

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		wantTTL time.Duration
		wantURL string
		wantErr string
	}{
		{"defaults", nil, nil, time.Hour, "", ""},
		{"from the environment", map[string]string{"T_COMPLETED_TTL": "2h", "T_DATABASE_URL": "postgres://x"}, nil, 2 * time.Hour, "postgres://x", ""},
		{"command line wins", map[string]string{"T_COMPLETED_TTL": "2h"}, []string{"--completed-ttl", "3h"}, 3 * time.Hour, "", ""},
		{"other prefix ignored", map[string]string{"OTHER_COMPLETED_TTL": "2h"}, nil, time.Hour, "", ""},
		{"bad value named, not echoed", map[string]string{"T_COMPLETED_TTL": "hunter2-secret"}, nil, time.Hour, "", "T_COMPLETED_TTL: not a valid duration value for --completed-ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			flags := pflag.NewFlagSet("t", pflag.ContinueOnError)
			ttl := flags.Duration("completed-ttl", time.Hour, "")
			url := flags.String("database-url", "", "")
			if err := flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := Apply(flags, "T")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Apply error = %v, want %q", err, tc.wantErr)
				}
				for _, v := range tc.env {
					if strings.Contains(err.Error(), v) {
						t.Fatalf("error %q echoes the value", err)
					}
				}
				return
			}
			if err != nil || *ttl != tc.wantTTL || *url != tc.wantURL {
				t.Fatalf("Apply = %v; ttl %v, url %q; want ttl %v, url %q", err, *ttl, *url, tc.wantTTL, tc.wantURL)
			}
			if flags.Lookup("completed-ttl").DefValue != "1h0m0s" {
				t.Fatalf("the default shown by --help changed to %q", flags.Lookup("completed-ttl").DefValue)
			}
		})
	}
}

package server

import (
	"strings"
	"testing"
)

func TestCheckDatabaseURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"postgres://u@h:5432/db", true},
		{"postgresql://u@h/db?sslmode=disable", true},
		{"POSTGRES://u@h/db", true},
		{"host=h dbname=db", true},
		{"mysql://root:hunter2@h/db", false},
		{"sqlite:///tmp/x.db", false},
	} {
		err := checkDatabaseURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.url, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "hunter2")) {
			t.Errorf("%s: %q should name the supported schemes and not echo the URL", tc.url, err)
		}
	}
}

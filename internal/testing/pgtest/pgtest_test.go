package pgtest

import "testing"

func TestWithSetting(t *testing.T) {
	for _, tc := range []struct{ in, key, value, want string }{
		{"postgres://u@h:5432/postgres?sslmode=disable", "dbname", "db1", "postgres://u@h:5432/db1?sslmode=disable"},
		{"postgres://u@h/db1?sslmode=disable", "search_path", "s1", "postgres://u@h/db1?search_path=s1&sslmode=disable"},
		{"postgresql://u@h", "search_path", "s1", "postgresql://u@h?search_path=s1"},
		{"host=h user=u dbname=postgres", "dbname", "db1", "host=h user=u dbname=postgres dbname=db1"},
	} {
		if got := withSetting(tc.in, tc.key, tc.value); got != tc.want {
			t.Errorf("withSetting(%q, %q, %q) = %q, want %q", tc.in, tc.key, tc.value, got, tc.want)
		}
	}
}

func TestInCI(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"", false},
		{"false", false},
		{"FALSE", false},
		{"0", false},
		{" false ", false},
		{"true", true},
		{"1", true},
		{"yes", true},
		{"True", true},
		{"github-actions", true},
	} {
		if got := InCI(tc.value); got != tc.want {
			t.Errorf("InCI(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

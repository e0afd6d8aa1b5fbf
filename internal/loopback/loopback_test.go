package loopback

import "testing"

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   bool
	}{
		{"127.0.0.1:7070", true},
		{"127.0.0.2:1", true},
		{"localhost:7070", true},
		{"[::1]:7070", true},
		{"127.0.0.1", true},
		{"unix:/run/dedupd.sock", true},
		{"unix-abstract:dedupd", true},
		{"dns:///127.0.0.1:7070", true},
		{"dns:127.0.0.1:7070", true},
		{"passthrough:///localhost:7070", true},
		{"dns://8.8.8.8/127.0.0.1:7070", true}, // the authority is the resolver
		{"ipv4:127.0.0.1:1,127.0.0.2:2", true},
		{"ipv6:[::1]:1", true},

		{"10.0.0.1:7070", false},
		{"0.0.0.0:7070", false},
		{":7070", false}, // every interface
		{"[::]:7070", false},
		{"dedupd:7070", false},
		{"localhost.example.com:7070", false},
		{"dns:///dedupd.example:7070", false},
		{"dns://127.0.0.1/10.0.0.1:7070", false},
		{"dns://127.0.0.1", false},
		{"dns://8.8.8.8/localhost:7070", false}, // that resolver may map localhost anywhere
		{"ipv6:[::1]:1,[::ffff:127.0.0.1]:2", true},
		{"ipv6:[::1]:1,[::ffff:10.0.0.1]:2", false},
		{"ipv4:127.0.0.1:1,10.0.0.1:2", false}, // one address off the machine
		{"ipv6:[::1]:1,[2001:db8::1]:2", false},
		{"ipv6:[::1]:1,[::ffff:127.0.0.1]:17071", true}, // an IPv4-mapped loopback
		{"ipv6:[::1]:1,[::ffff:10.0.0.1]:2", false},     // the second decides too
		{"", false},
	} {
		if got := Target(tc.target); got != tc.want {
			t.Errorf("Target(%q) = %v, want %v", tc.target, got, tc.want)
		}
	}
}

package httpidem

import (
	"fmt"
	"net/http"
	"strings"
)

// Need says whether a request must carry a key.
type Need int

const (
	// Required: a request without a key gets 400.
	Required Need = iota + 1
	// Optional: a request with a key is made idempotent; one without
	// passes through untouched.
	Optional
	// Off: the request passes through untouched, key or not.
	Off
)

// Rule sets the Need of the requests with Method (or any method, for "*")
// whose path is PathPrefix or lies below it ("/orders" covers /orders and
// /orders/7, not /ordersx). The most specific rule wins: the longest
// prefix, then a named method over "*", then the later rule. Config.Rules
// lie over the defaults, POST / and PATCH / Required; every other request
// is Off.
type Rule struct {
	Method     string
	PathPrefix string
	Need       Need
}

var defaultRules = []Rule{{"POST", "/", Required}, {"PATCH", "/", Required}}

func (r Rule) check() error {
	switch {
	case r.Method == "":
		return fmt.Errorf("httpidem: rule %+v has no method (use \"*\" for every method)", r)
	case !strings.HasPrefix(r.PathPrefix, "/"):
		return fmt.Errorf("httpidem: rule %s %q: the path prefix must start with /", r.Method, r.PathPrefix)
	case r.Need < Required || r.Need > Off:
		return fmt.Errorf("httpidem: rule %s %s has no Need", r.Method, r.PathPrefix)
	}
	return nil
}

// ParseRule reads "METHOD /prefix=required|optional|off", as the gateway's
// --rule flag takes it; METHOD may be "*".
func ParseRule(s string) (Rule, error) {
	spec, need, ok := strings.Cut(s, "=")
	method, prefix, ok2 := strings.Cut(strings.TrimSpace(spec), " ")
	if !ok || !ok2 {
		return Rule{}, fmt.Errorf("rule %q: want \"METHOD /prefix=required|optional|off\"", s)
	}
	r := Rule{Method: strings.ToUpper(method), PathPrefix: strings.TrimSpace(prefix)}
	switch strings.TrimSpace(need) {
	case "required":
		r.Need = Required
	case "optional":
		r.Need = Optional
	case "off":
		r.Need = Off
	default:
		return Rule{}, fmt.Errorf("rule %q: %q is not one of required, optional, off", s, need)
	}
	return r, r.check()
}

// need is the Need of a request by the rules (defaults first).
func need(rules []Rule, method, path string) Need {
	best, bestLen, bestNamed := Off, -1, false
	for _, list := range [][]Rule{defaultRules, rules} {
		for _, r := range list {
			if (r.Method != "*" && r.Method != method) || !under(path, r.PathPrefix) {
				continue
			}
			named := r.Method != "*"
			n := len(strings.TrimSuffix(r.PathPrefix, "/"))
			if n > bestLen || (n == bestLen && (named || !bestNamed)) {
				best, bestLen, bestNamed = r.Need, n, named
			}
		}
	}
	return best
}

// under says whether path is prefix or below it, segment by segment.
func under(path, prefix string) bool {
	p := strings.TrimSuffix(prefix, "/")
	return p == "" || path == p || strings.HasPrefix(path, p+"/")
}

// KeyRequired reports whether the rules refuse r without a key (400), so
// that a handler in front of the middleware that finds the key elsewhere
// refuses the same requests.
func (m *Middleware) KeyRequired(r *http.Request) bool {
	return need(m.cfg.Rules, r.Method, r.URL.Path) == Required
}

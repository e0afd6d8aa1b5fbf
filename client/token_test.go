package client

import (
	"fmt"
	"strings"
	"testing"
)

func TestTokenNeverFormatted(t *testing.T) {
	b := bearerToken{token: "s3cret"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(verb, b); strings.Contains(got, "s3cret") {
			t.Errorf("%s shows the token: %s", verb, got)
		}
	}
}

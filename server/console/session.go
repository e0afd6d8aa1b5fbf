package console

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/dedupd/dedupd/internal/version"
)

// sessionReply is the answer of POST /console/api/session.
type sessionReply struct {
	// Auth is false when the server runs without auth: every caller is
	// admin of every consumer.
	Auth     bool         `json:"auth"`
	Identity Identity     `json:"identity"`
	Build    version.Info `json:"build"`
}

// session tells the app who the presented credential is. It reads no
// store: it is the auth file's answer alone, refused 401 without a valid
// credential, in the shape of a Connect error so the app shows every
// refusal one way.
func session(opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		reply := sessionReply{Build: opts.Build}
		if opts.Identify == nil {
			reply.Identity = Identity{Name: "anyone (auth is off)", Consumers: []string{"*"}, Admin: true}
		} else {
			id, err := opts.Identify(r)
			if err != nil {
				writeJSON(w, http.StatusUnauthorized, map[string]string{
					"code":    "unauthenticated",
					"message": "sign in: " + err.Error(),
				})
				return
			}
			reply.Auth, reply.Identity = true, id
		}
		writeJSON(w, http.StatusOK, reply)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// BearerToken is the token of an "Authorization: Bearer <token>" header
// (the scheme in any case), and whether the header was there in that
// form: the rule the gRPC side applies to its metadata.
func BearerToken(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return "", false
	}
	scheme, token, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	return token, true
}

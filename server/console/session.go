package console

import (
	"encoding/json"
	"fmt"
	"io"
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

// sessionBodyBytes bounds the request body of POST /console/api/session.
// The app sends {}; the body means nothing, but is read (and a longer one
// refused 413, its connection closed) so that a caller cannot hold the
// route with a body that goes on, as it cannot hold the API's routes.
const sessionBodyBytes = 1 << 10

// session tells the app who the presented credential is. It reads no
// store: it is the auth file's answer alone, refused 401 without a valid
// credential, in the shape of a Connect error so the app shows every
// refusal one way. It logs nothing, so a credential it refuses is in no
// log; the refusal says why without repeating it.
func session(opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, sessionBodyBytes)); err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{
				"code":    "resource_exhausted",
				"message": fmt.Sprintf("the session request's body may hold at most %d bytes; the console sends {}", sessionBodyBytes),
			})
			return
		}
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

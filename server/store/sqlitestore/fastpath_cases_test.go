package sqlitestore

import (
	"time"

	"github.com/dedupd/dedupd/server/store"
)

type heldVariant struct {
	name string
	rec  *store.Record // nil: none held
}

// heldVariants are the rows the writer may hold for a stored row: none,
// the row itself, and the row changed in any one column (as after a
// rollback, an admin write, a takeover, or a restore).
func heldVariants(stored *store.Record) []heldVariant {
	vs := []heldVariant{{"none", nil}}
	if stored == nil {
		return vs
	}
	exact := *stored
	vs = append(vs, heldVariant{"exact", &exact})
	for _, c := range []struct {
		name   string
		change func(r *store.Record)
	}{
		{"pending", func(r *store.Record) { r.State = store.Pending }},
		{"completed", func(r *store.Record) { r.State = store.Completed }},
		{"token+1", func(r *store.Record) { r.FencingToken++ }},
		{"token-1", func(r *store.Record) { r.FencingToken-- }},
		{"digest", func(r *store.Record) { r.Digest = []byte("z") }},
		{"attempts", func(r *store.Record) { r.Attempts++ }},
		{"owner", func(r *store.Record) { r.Owner = "x" }},
		{"result", func(r *store.Record) { r.Result = []byte("x") }},
		{"no-result", func(r *store.Record) { r.Result = nil }},
		{"rejection", func(r *store.Record) { r.Rejection = &store.Rejection{Reason: "HELD"} }},
		{"no-rejection", func(r *store.Record) { r.Rejection = nil }},
		{"reason", changeRejection(func(j *store.Rejection) { j.Reason += "x" })},
		{"message", changeRejection(func(j *store.Rejection) { j.Message += "x" })},
		{"detail", changeRejection(func(j *store.Rejection) { j.Detail = append([]byte("x"), j.Detail...) })},
		{"retryable", changeRejection(func(j *store.Rejection) { j.Retryable = !j.Retryable })},
		{"created", func(r *store.Record) { r.CreatedAt = r.CreatedAt.Add(time.Microsecond) }},
		{"updated", func(r *store.Record) { r.UpdatedAt = r.UpdatedAt.Add(time.Microsecond) }},
		{"lease", func(r *store.Record) { r.LeaseExpiresAt = r.LeaseExpiresAt.Add(time.Microsecond) }},
		{"expires", func(r *store.Record) { r.ExpiresAt = r.ExpiresAt.Add(time.Microsecond) }},
		{"live", func(r *store.Record) { r.ExpiresAt = r.ExpiresAt.Add(time.Hour) }},
	} {
		r := *stored
		c.change(&r)
		vs = append(vs, heldVariant{c.name, &r})
	}
	return vs
}

// changeRejection changes one column of a record's rejection, if it has
// one.
func changeRejection(change func(j *store.Rejection)) func(r *store.Record) {
	return func(r *store.Record) {
		if r.Rejection != nil {
			j := *r.Rejection
			change(&j)
			r.Rejection = &j
		}
	}
}

package sqlitestore

import (
	"reflect"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// A finish of a held lease in one statement needs store.Apply's decision
// before the row is read. That is sound because of the rows the UPDATE's
// WHERE clause admits: state PENDING, the command's fencing token, and
// expires_at after now. On every such row Apply takes one branch (the
// record is live, the token is the holder's, the state is pending: the
// write branch of Complete, Reject and ExtendLease), and that branch sets
// some columns from the command and now alone and copies the others from
// the row.
//
// planFinish does not take that on trust: it asks Apply on two probe rows
// the WHERE clause admits that differ in every column it leaves free
// (digest, attempts, owner, result, rejection, the times; one lease
// lapsed, one live; one row a microsecond from expiry, one hours from it).
// A column both decisions leave as their row had it is copied, and the
// UPDATE leaves it alone; a column both set to the same value is set to
// that value; anything else (a refusal, no write, a column that follows
// the row some other way, decisions that differ otherwise) means no plan,
// and the command takes the path that reads. TestFastPathIsApply checks
// the result against Apply over stored rows of every kind, on both sides
// of each clock boundary.

// heldState is the state the UPDATE's WHERE clause pins.
const heldState = store.Pending

// columnSet is a set of recordColumns, by index.
type columnSet uint32

func (s columnSet) has(i int) bool { return s&(1<<i) != 0 }

// finishPlan is a finish decided ahead of the read.
type finishPlan struct {
	token int64
	// set are the columns the UPDATE writes, values their values in
	// recordColumns order.
	set    columnSet
	values []any
	// d is Apply's decision but for its Record, which is the row written.
	d store.Decision
}

// planFinish plans cmd as an UPDATE of a held lease at now (whole
// microseconds). It reports false for a claim, and for any command whose
// decisions on the probes do not have the shape described above.
func planFinish(consumer, key string, cmd store.Command, now time.Time) (finishPlan, bool) {
	token, ok := heldToken(cmd)
	if !ok {
		return finishPlan{}, false
	}
	a, b := heldProbes(consumer, key, token, now)
	da, errA := store.Apply(&a, cmd, now)
	db, errB := store.Apply(&b, cmd, now)
	if errA != nil || errB != nil || !da.Write || !db.Write {
		return finishPlan{}, false
	}
	inA, inB := recordArgs(&a), recordArgs(&b)
	outA, outB := recordArgs(&da.Record), recordArgs(&db.Record)
	p := finishPlan{token: token}
	for i := range recordColumns {
		switch {
		case reflect.DeepEqual(outA[i], inA[i]) && reflect.DeepEqual(outB[i], inB[i]):
			// copied from the row: left alone
		case reflect.DeepEqual(outA[i], outB[i]):
			p.set |= 1 << i
			p.values = append(p.values, outA[i])
		default:
			return finishPlan{}, false
		}
	}
	if p.set == 0 {
		return finishPlan{}, false
	}
	da.Record, db.Record = store.Record{}, store.Record{}
	if !reflect.DeepEqual(da, db) {
		return finishPlan{}, false
	}
	p.d = da
	return p, true
}

// heldToken is the fencing token a command other than a claim presents.
func heldToken(cmd store.Command) (int64, bool) {
	switch c := cmd.(type) {
	case store.CompleteParams:
		return c.FencingToken, true
	case store.RejectParams:
		return c.FencingToken, true
	case store.ExtendLeaseParams:
		return c.FencingToken, true
	}
	return 0, false
}

// heldProbes are two rows the finish UPDATE's WHERE clause admits at now,
// alike in the columns it pins and different in every other.
func heldProbes(consumer, key string, token int64, now time.Time) (a, b store.Record) {
	a = store.Record{
		Consumer: consumer, Key: key, State: heldState, FencingToken: token,
		Digest: []byte("a"), Attempts: 1, Owner: "a",
		CreatedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-time.Hour),
		LeaseExpiresAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Microsecond),
	}
	b = store.Record{
		Consumer: consumer, Key: key, State: heldState, FencingToken: token,
		Digest: []byte("bb"), Attempts: 7, Owner: "b", Result: []byte("r"),
		Rejection: &store.Rejection{Reason: "R", Message: "M", Detail: []byte("D"), Retryable: true},
		CreatedAt: now.Add(-3 * time.Hour), UpdatedAt: now.Add(-30 * time.Minute),
		LeaseExpiresAt: now.Add(time.Hour), ExpiresAt: now.Add(100 * time.Hour),
	}
	return a, b
}

package pgstore

import (
	"reflect"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// A stream write in one round trip needs store.ApplyStream's decision
// before the database has said what time it is. That is sound because of
// how ApplyStream uses its clock, now:
//
//   - the branch it takes depends on now only through two comparisons with
//     the stored stream: now < ExpiresAt (an expired stream counts as
//     absent) and now < LeaseExpiresAt (a live lease); for an absent
//     stream, through none;
//   - every time it sets is either copied from the stored stream or now
//     plus a duration (cut to microseconds, which, now being whole
//     microseconds, is now plus the duration cut).
//
// So the decision made at an estimate of the database's clock, at, is the
// decision at the database's real clock whenever both comparisons come out
// the same for both, with each time of the second kind moved by the
// difference. planStreamWrite finds which times are of which kind by
// deciding twice, at at and a little later: a time that moved by exactly
// that much is the clock plus a duration, one that stayed is copied, and
// anything else (or any other difference between the two decisions) means
// no plan. The statement then states the comparisons in its WHERE clause
// against statement_timestamp(), and writes each time of the second kind
// as statement_timestamp() plus its duration: the row it writes is
// ApplyStream's decision at the statement's own clock, or it writes
// nothing. TestStreamPlanIsApplyStream checks the argument against
// ApplyStream itself.

// planProbe is how much later the second decision is made.
const planProbe = time.Millisecond

// streamTimeCount is the number of time columns of a stream, in
// streamColumns order: lease_expires_at, created_at, updated_at,
// expires_at.
const streamTimeCount = 4

func streamTimes(st *store.Stream) [streamTimeCount]*time.Time {
	return [streamTimeCount]*time.Time{&st.LeaseExpiresAt, &st.CreatedAt, &st.UpdatedAt, &st.ExpiresAt}
}

// streamPlan is a write decided ahead of the database's clock.
type streamPlan struct {
	// d is the decision at the estimate; its times of the second kind are
	// replaced by the statement's clock plus offset.
	d store.StreamDecision
	// fixed is the time a column takes when it is copied, nil when it is
	// the clock plus offset.
	fixed  [streamTimeCount]*time.Time
	offset [streamTimeCount]time.Duration
	// beforeExpiry and beforeLease are the comparisons the decision rests
	// on (for a stored stream): now < ExpiresAt, now < LeaseExpiresAt.
	beforeExpiry, beforeLease bool
}

// planStreamWrite decides cmd on stored (nil: absent) at the estimate at of
// the database's clock. It reports false when the decision writes nothing,
// is a refusal, needs or writes the stream's parked events, or does not
// have the shape described above: those take the path that reads first
// (or the transaction of parked.go). A plan's decision carries the parked
// columns of stored (count, bytes, skipped range) as ApplyStream copies
// them.
func planStreamWrite(stored *store.Stream, cmd store.StreamCommand, at time.Time) (streamPlan, bool) {
	at = store.Now(at)
	later := at.Add(planProbe)
	p := streamPlan{}
	if stored != nil {
		p.beforeExpiry, p.beforeLease = at.Before(stored.ExpiresAt), at.Before(stored.LeaseExpiresAt)
		if p.beforeExpiry != later.Before(stored.ExpiresAt) || p.beforeLease != later.Before(stored.LeaseExpiresAt) {
			return streamPlan{}, false // a boundary lies between the two decisions
		}
	}
	d1, err1 := store.ApplyStream(stored, cmd, at)
	d2, err2 := store.ApplyStream(stored, cmd, later)
	if err1 != nil || err2 != nil || !d1.Write || !d2.Write {
		// ErrNeedsParkedView among them: the write is the transaction's
		// (parked.go).
		return streamPlan{}, false
	}
	if touchesParked(&d1) || touchesParked(&d2) {
		return streamPlan{}, false // one statement writes only the stream's row
	}
	t1, t2 := streamTimes(&d1.Stream), streamTimes(&d2.Stream)
	for i := range streamTimeCount {
		switch t2[i].Sub(*t1[i]) {
		case 0:
			fixed := *t1[i]
			p.fixed[i] = &fixed
		case planProbe:
			p.offset[i] = t1[i].Sub(at)
		default:
			return streamPlan{}, false
		}
		*t1[i], *t2[i] = time.Time{}, time.Time{}
	}
	if !reflect.DeepEqual(d1, d2) {
		return streamPlan{}, false
	}
	p.d = d1
	return p, true
}

// touchesParked reports whether a decision writes or hands out parked
// events, which only the transaction of parked.go does. store.ApplyStream
// decides none of that without a view of them; this keeps it so here.
func touchesParked(d *store.StreamDecision) bool {
	return d.UnparkAll || len(d.Unpark) > 0 || d.Park != nil || d.HandedOut != nil || d.Skipped != nil || d.Dropped != 0
}

// at is the plan's decision at the database's clock now.
func (p streamPlan) at(now time.Time) store.StreamDecision {
	d := p.d
	for i, t := range streamTimes(&d.Stream) {
		if p.fixed[i] != nil {
			*t = *p.fixed[i]
		} else {
			*t = store.Now(now).Add(p.offset[i])
		}
	}
	return d
}

// timeArgs are the parameters of streamTimeValues: for each time column,
// the copied time or NULL, then the offset in microseconds.
func (p streamPlan) timeArgs() []any {
	args := make([]any, 0, 2*streamTimeCount)
	for i := range streamTimeCount {
		args = append(args, p.fixed[i], p.offset[i].Microseconds())
	}
	return args
}

package store

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// The fixtures describe one key at a fixed instant t0. Its current lease,
// fencing token 3 (the key's third acquisition), began at t0 and runs for
// lease; every record is live at t0 and gone by tGone.
const lease = 10 * time.Second

var (
	t0    = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	tLate = t0.Add(lease + time.Second) // the lease has run out, the record lives on
	tGone = t0.Add(48 * time.Hour)      // past every record's ExpiresAt
	pol   = Policy{
		DefaultLeaseTTL: 30 * time.Second,
		CompletedTTL:    24 * time.Hour,
		RejectedTTL:     12 * time.Hour,
		ReleasedTTL:     time.Hour,
	}
	digA = []byte("digest-A")
	digB = []byte("digest-B")
)

func terminalRej() Rejection {
	return Rejection{Reason: "OUT_OF_STOCK", Message: "none left", Detail: []byte{0, 1, 0}}
}

func retryableRej() Rejection {
	return Rejection{Reason: "BUSY", Message: "try later", Detail: []byte{9}, Retryable: true}
}

func pending() *Record {
	return &Record{
		Consumer: "c", Key: "k", State: Pending, Digest: digA,
		FencingToken: 3, Attempts: 3, Owner: "w-old",
		CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0,
		LeaseExpiresAt: t0.Add(lease), ExpiresAt: t0.Add(lease + pol.ReleasedTTL),
	}
}

// finished turns pending() into the record a finishing call made at t0+1s.
func finished(state State, ttl time.Duration, f func(*Record)) *Record {
	r := pending()
	r.State = state
	r.UpdatedAt = t0.Add(time.Second)
	r.ExpiresAt = r.UpdatedAt.Add(ttl)
	f(r)
	return r
}

func completed() *Record {
	return finished(Completed, pol.CompletedTTL, func(r *Record) { r.Result = []byte("result") })
}

func rejected() *Record {
	return finished(Rejected, pol.RejectedTTL, func(r *Record) { x := terminalRej(); r.Rejection = &x })
}

func released() *Record {
	return finished(Released, pol.ReleasedTTL, func(r *Record) { x := retryableRej(); r.Rejection = &x })
}

// with returns r after applying f, for one-off variations of a fixture.
func with(r *Record, f func(*Record)) *Record { f(r); return r }

func claimCmd(digest []byte, ttl time.Duration) ClaimParams {
	return ClaimParams{Consumer: "c", Key: "k", Digest: digest, LeaseTTL: ttl, Owner: "w-new", Policy: pol}
}

func completeCmd(token int64, result string) CompleteParams {
	return CompleteParams{Consumer: "c", Key: "k", FencingToken: token, Result: []byte(result), Policy: pol}
}

func rejectCmd(token int64, r Rejection) RejectParams {
	return RejectParams{Consumer: "c", Key: "k", FencingToken: token, Rejection: r, Policy: pol}
}

func extendCmd(token int64, ttl time.Duration) ExtendLeaseParams {
	return ExtendLeaseParams{Consumer: "c", Key: "k", FencingToken: token, LeaseTTL: ttl, Policy: pol}
}

// fresh is the record of a first acquisition (or of one after expiry).
func fresh(token int64, digest []byte, now time.Time, ttl time.Duration) Record {
	return Record{
		Consumer: "c", Key: "k", State: Pending, Digest: digest,
		FencingToken: token, Attempts: 1, Owner: "w-new",
		CreatedAt: now, UpdatedAt: now,
		LeaseExpiresAt: now.Add(ttl), ExpiresAt: now.Add(ttl + pol.ReleasedTTL),
	}
}

// takenOver is stored after a new holder acquired it at now: next token,
// one more attempt, the new owner, no leftover outcome, a new lease.
func takenOver(stored *Record, now time.Time, ttl time.Duration) Record {
	r := *stored
	r.State, r.Owner, r.Result, r.Rejection = Pending, "w-new", nil, nil
	r.FencingToken++
	r.Attempts++
	r.UpdatedAt = now
	r.LeaseExpiresAt, r.ExpiresAt = now.Add(ttl), now.Add(ttl+pol.ReleasedTTL)
	return r
}

func acquired(r Record) Decision   { return Decision{Record: r, Write: true, Outcome: Acquired} }
func written(r *Record) Decision   { return Decision{Record: *r, Write: true} }
func unchanged(r *Record) Decision { return Decision{Record: *r} }

type applyCase struct {
	name   string
	stored *Record
	cmd    Command
	now    time.Time
	want   Decision // when err is nil
	err    error    // the sentinel the error must match, if any
	// conflict: the error must be a *ConflictError carrying the stored
	// record. False means a bare sentinel: the key counts as absent.
	conflict bool
}

func runApply(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := clone(tc.stored)
			got, err := Apply(tc.stored, tc.cmd, tc.now)
			// Apply is pure: backends rely on it leaving the loaded row as is.
			if !reflect.DeepEqual(tc.stored, before) {
				t.Fatalf("Apply modified the stored record:\n got %+v\nwant %+v", tc.stored, before)
			}
			if tc.err == nil {
				if err != nil {
					t.Fatalf("Apply: unexpected error %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Apply:\n got %+v\nwant %+v", got, tc.want)
				}
				return
			}
			checkErr(t, got, err, tc)
		})
	}
}

func checkErr(t *testing.T, got Decision, err error, tc applyCase) {
	t.Helper()
	if !errors.Is(err, tc.err) {
		t.Fatalf("Apply: error %v, want %v", err, tc.err)
	}
	if !reflect.DeepEqual(got, Decision{}) {
		t.Errorf("Apply returned a decision with its error: %+v", got)
	}
	var ce *ConflictError
	if errors.As(err, &ce) != tc.conflict {
		t.Fatalf("Apply: error %v: ConflictError = %v, want %v", err, !tc.conflict, tc.conflict)
	}
	if tc.conflict && !reflect.DeepEqual(ce.Record, *tc.stored) {
		t.Errorf("ConflictError.Record:\n got %+v\nwant %+v", ce.Record, *tc.stored)
	}
}

func clone(r *Record) *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Digest, c.Result = cloneBytes(r.Digest), cloneBytes(r.Result)
	if r.Rejection != nil {
		x := *r.Rejection
		x.Detail = cloneBytes(x.Detail)
		c.Rejection = &x
	}
	return &c
}

// cloneBytes copies b, keeping nil and empty apart as DeepEqual does.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func TestApplyClaim(t *testing.T) {
	// A time in another zone with a sub-microsecond part: Apply must record
	// it as UTC truncated to the microsecond.
	odd := t0.Add(999 * time.Nanosecond).In(time.FixedZone("X", 5*3600))
	runApply(t, []applyCase{
		{name: "absent: acquired with token 1", cmd: claimCmd(digA, lease), now: t0,
			want: acquired(fresh(1, digA, t0, lease))},
		{name: "absent, no lease named: default lease", cmd: claimCmd(digA, 0), now: t0,
			want: acquired(fresh(1, digA, t0, pol.DefaultLeaseTTL))},
		{name: "absent, now normalised to UTC microseconds", cmd: claimCmd(digA, lease), now: odd,
			want: acquired(fresh(1, digA, t0, lease))},
		{name: "pending live: in progress", stored: pending(), cmd: claimCmd(digA, lease), now: t0.Add(4 * time.Second),
			want: Decision{Record: *pending(), Outcome: InProgress, RetryAfter: 6 * time.Second}},
		{name: "pending live: retry after counts from the truncated now", stored: pending(),
			cmd: claimCmd(digA, lease), now: t0.Add(4*time.Second + 1500*time.Nanosecond),
			want: Decision{Record: *pending(), Outcome: InProgress, RetryAfter: 6*time.Second - time.Microsecond}},
		{name: "pending, lease runs out exactly now: taken over", stored: pending(), cmd: claimCmd(digA, 0),
			now: t0.Add(lease), want: acquired(takenOver(pending(), t0.Add(lease), pol.DefaultLeaseTTL))},
		{name: "pending, lease ran out: taken over", stored: pending(), cmd: claimCmd(digA, lease), now: tLate,
			want: acquired(takenOver(pending(), tLate, lease))},
		{name: "released: acquired, rejection cleared", stored: released(), cmd: claimCmd(digA, lease),
			now: t0.Add(2 * time.Second), want: acquired(takenOver(released(), t0.Add(2*time.Second), lease))},
		{name: "completed: replayed", stored: completed(), cmd: claimCmd(digA, lease), now: t0.Add(time.Hour),
			want: Decision{Record: *completed(), Outcome: AlreadyCompleted}},
		{name: "rejected: replayed", stored: rejected(), cmd: claimCmd(digA, lease), now: t0.Add(time.Hour),
			want: Decision{Record: *rejected(), Outcome: AlreadyRejected}},
		{name: "nil and empty digests match", stored: with(completed(), func(r *Record) { r.Digest = nil }),
			cmd: claimCmd([]byte{}, lease), now: t0.Add(time.Hour),
			want: Decision{Record: *with(completed(), func(r *Record) { r.Digest = nil }), Outcome: AlreadyCompleted}},
		{name: "pending live, other digest: mismatch", stored: pending(), cmd: claimCmd(digB, lease), now: t0,
			err: ErrDigestMismatch, conflict: true},
		{name: "pending lapsed, other digest: mismatch", stored: pending(), cmd: claimCmd(digB, lease), now: tLate,
			err: ErrDigestMismatch, conflict: true},
		{name: "released, other digest: mismatch", stored: released(), cmd: claimCmd(digB, lease), now: tLate,
			err: ErrDigestMismatch, conflict: true},
		{name: "completed, other digest: mismatch", stored: completed(), cmd: claimCmd(digB, lease), now: tLate,
			err: ErrDigestMismatch, conflict: true},
		{name: "rejected, other digest: mismatch", stored: rejected(), cmd: claimCmd(digB, lease), now: tLate,
			err: ErrDigestMismatch, conflict: true},
		{name: "stored empty digest, claim non-empty: mismatch", stored: with(completed(), func(r *Record) { r.Digest = nil }),
			cmd: claimCmd(digA, lease), now: tLate, err: ErrDigestMismatch, conflict: true},
		{name: "stored digest, claim empty: mismatch", stored: pending(), cmd: claimCmd(nil, lease), now: t0,
			err: ErrDigestMismatch, conflict: true},
		// An expired record is absent, but its token keeps counting.
		{name: "expired pending: fresh acquisition, token counts on", stored: pending(), cmd: claimCmd(digB, lease),
			now: tGone, want: acquired(fresh(4, digB, tGone, lease))},
		{name: "expired released: fresh acquisition", stored: released(), cmd: claimCmd(digB, lease),
			now: tGone, want: acquired(fresh(4, digB, tGone, lease))},
		{name: "expired completed: fresh acquisition", stored: completed(), cmd: claimCmd(digB, lease),
			now: tGone, want: acquired(fresh(4, digB, tGone, lease))},
		{name: "expired rejected: fresh acquisition", stored: rejected(), cmd: claimCmd(digA, lease),
			now: tGone, want: acquired(fresh(4, digA, tGone, lease))},
		{name: "expires exactly now: absent", stored: pending(), cmd: claimCmd(digB, lease),
			now: pending().ExpiresAt, want: acquired(fresh(4, digB, pending().ExpiresAt, lease))},
		{name: "expires a microsecond from now: still there", stored: pending(), cmd: claimCmd(digA, lease),
			now:  pending().ExpiresAt.Add(-time.Microsecond),
			want: acquired(takenOver(pending(), pending().ExpiresAt.Add(-time.Microsecond), lease))},
	})
}

func TestApplyComplete(t *testing.T) {
	done := func(now time.Time) *Record {
		return with(pending(), func(r *Record) {
			r.State, r.Result, r.UpdatedAt, r.ExpiresAt = Completed, []byte("out"), now, now.Add(pol.CompletedTTL)
		})
	}
	emptyResult := func() *Record { return with(completed(), func(r *Record) { r.Result = []byte{} }) }
	runApply(t, []applyCase{
		{name: "pending: completed", stored: pending(), cmd: completeCmd(3, "out"), now: t0.Add(2 * time.Second),
			want: written(done(t0.Add(2 * time.Second)))},
		{name: "lease ran out, nobody took over: completed", stored: pending(), cmd: completeCmd(3, "out"), now: tLate,
			want: written(done(tLate))},
		{name: "repeated with the same result: no write", stored: completed(), cmd: completeCmd(3, "result"),
			now: tLate, want: unchanged(completed())},
		{name: "repeated, nil result matches empty", stored: emptyResult(),
			cmd: CompleteParams{Consumer: "c", Key: "k", FencingToken: 3, Policy: pol},
			now: tLate, want: unchanged(emptyResult())},
		{name: "different result: already finished", stored: completed(), cmd: completeCmd(3, "other"),
			now: tLate, err: ErrAlreadyFinished, conflict: true},
		{name: "on rejected: already finished", stored: rejected(), cmd: completeCmd(3, "out"),
			now: tLate, err: ErrAlreadyFinished, conflict: true},
		{name: "on released: lease lost", stored: released(), cmd: completeCmd(3, "out"),
			now: tLate, err: ErrLeaseLost, conflict: true},
		{name: "stale token: lease lost", stored: pending(), cmd: completeCmd(2, "out"),
			now: t0, err: ErrLeaseLost, conflict: true},
		{name: "future token: lease lost", stored: pending(), cmd: completeCmd(4, "out"),
			now: t0, err: ErrLeaseLost, conflict: true},
		{name: "stale token on completed, same result: lease lost", stored: completed(), cmd: completeCmd(2, "result"),
			now: tLate, err: ErrLeaseLost, conflict: true},
		{name: "absent: lease lost", cmd: completeCmd(1, "out"), now: t0, err: ErrLeaseLost},
		{name: "expired pending: lease lost", stored: pending(), cmd: completeCmd(3, "out"), now: tGone, err: ErrLeaseLost},
		{name: "expired completed, same result: lease lost", stored: completed(), cmd: completeCmd(3, "result"),
			now: tGone, err: ErrLeaseLost},
	})
}

func TestApplyReject(t *testing.T) {
	now := t0.Add(2 * time.Second)
	refused := func(state State, rej Rejection, ttl time.Duration) *Record {
		return with(pending(), func(r *Record) {
			r.State, r.Rejection, r.UpdatedAt, r.ExpiresAt = state, &rej, now, now.Add(ttl)
		})
	}
	other := terminalRej()
	other.Message = "changed"
	asRetryable := terminalRej()
	asRetryable.Retryable = true
	asTerminal := retryableRej()
	asTerminal.Retryable = false
	runApply(t, []applyCase{
		{name: "pending, terminal: rejected", stored: pending(), cmd: rejectCmd(3, terminalRej()), now: now,
			want: written(refused(Rejected, terminalRej(), pol.RejectedTTL))},
		{name: "pending, retryable: released", stored: pending(), cmd: rejectCmd(3, retryableRej()), now: now,
			want: written(refused(Released, retryableRej(), pol.ReleasedTTL))},
		{name: "lease ran out, nobody took over: rejected", stored: pending(), cmd: rejectCmd(3, terminalRej()),
			now: tLate, want: written(with(refused(Rejected, terminalRej(), pol.RejectedTTL), func(r *Record) {
				r.UpdatedAt, r.ExpiresAt = tLate, tLate.Add(pol.RejectedTTL)
			}))},
		{name: "repeated on rejected: no write", stored: rejected(), cmd: rejectCmd(3, terminalRej()), now: tLate,
			want: unchanged(rejected())},
		{name: "repeated retryable on released: no write", stored: released(), cmd: rejectCmd(3, retryableRej()),
			now: tLate, want: unchanged(released())},
		{name: "rejected, other message: already finished", stored: rejected(), cmd: rejectCmd(3, other),
			now: tLate, err: ErrAlreadyFinished, conflict: true},
		{name: "rejected, now retryable: already finished", stored: rejected(), cmd: rejectCmd(3, asRetryable),
			now: tLate, err: ErrAlreadyFinished, conflict: true},
		{name: "released, other rejection: lease lost", stored: released(), cmd: rejectCmd(3, terminalRej()),
			now: tLate, err: ErrLeaseLost, conflict: true},
		{name: "released, same rejection made terminal: lease lost", stored: released(), cmd: rejectCmd(3, asTerminal),
			now: tLate, err: ErrLeaseLost, conflict: true},
		{name: "on completed: already finished", stored: completed(), cmd: rejectCmd(3, terminalRej()),
			now: tLate, err: ErrAlreadyFinished, conflict: true},
		{name: "stale token: lease lost", stored: pending(), cmd: rejectCmd(2, retryableRej()),
			now: t0, err: ErrLeaseLost, conflict: true},
		{name: "stale token on rejected, same rejection: lease lost", stored: rejected(), cmd: rejectCmd(2, terminalRej()),
			now: tLate, err: ErrLeaseLost, conflict: true},
		{name: "absent: lease lost", cmd: rejectCmd(1, terminalRej()), now: t0, err: ErrLeaseLost},
		{name: "expired rejected, same rejection: lease lost", stored: rejected(), cmd: rejectCmd(3, terminalRej()),
			now: tGone, err: ErrLeaseLost},
	})
}

func TestApplyExtendLease(t *testing.T) {
	now := t0.Add(5 * time.Second)
	renewed := func(now time.Time, ttl time.Duration) *Record {
		return with(pending(), func(r *Record) {
			r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt = now, now.Add(ttl), now.Add(ttl+pol.ReleasedTTL)
		})
	}
	runApply(t, []applyCase{
		{name: "pending: renewed from now", stored: pending(), cmd: extendCmd(3, 20*time.Second), now: now,
			want: written(renewed(now, 20*time.Second))},
		{name: "pending, no lease named: default lease", stored: pending(), cmd: extendCmd(3, 0), now: now,
			want: written(renewed(now, pol.DefaultLeaseTTL))},
		{name: "shorter lease: shortened", stored: pending(), cmd: extendCmd(3, time.Second), now: now,
			want: written(renewed(now, time.Second))},
		{name: "lease ran out, nobody took over: renewed", stored: pending(), cmd: extendCmd(3, lease), now: tLate,
			want: written(renewed(tLate, lease))},
		{name: "released: lease lost", stored: released(), cmd: extendCmd(3, lease), now: now,
			err: ErrLeaseLost, conflict: true},
		{name: "completed: already finished", stored: completed(), cmd: extendCmd(3, lease), now: now,
			err: ErrAlreadyFinished, conflict: true},
		{name: "rejected: already finished", stored: rejected(), cmd: extendCmd(3, lease), now: now,
			err: ErrAlreadyFinished, conflict: true},
		{name: "stale token: lease lost", stored: pending(), cmd: extendCmd(2, lease), now: now,
			err: ErrLeaseLost, conflict: true},
		{name: "absent: lease lost", cmd: extendCmd(1, lease), now: now, err: ErrLeaseLost},
		{name: "expired: lease lost", stored: pending(), cmd: extendCmd(3, lease), now: tGone, err: ErrLeaseLost},
	})
}

// bogus is a Command that Apply does not know.
type bogus struct{}

func (bogus) isCommand()               {}
func (bogus) Op() Op                   { return Op{} }
func (bogus) Target() (string, string) { return "", "" }

func TestApplyUnknownCommand(t *testing.T) {
	_, err := Apply(pending(), bogus{}, t0)
	if err == nil {
		t.Fatal("Apply accepted an unknown command")
	}
	for _, sentinel := range []error{ErrNotFound, ErrDigestMismatch, ErrLeaseLost, ErrAlreadyFinished, ErrUnavailable} {
		if errors.Is(err, sentinel) {
			t.Errorf("unknown command reported as %v", sentinel)
		}
	}
}

func TestNow(t *testing.T) {
	zone := time.FixedZone("UTC-7", -7*3600)
	for _, tc := range []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"already normal", t0, t0},
		{"nanoseconds dropped", t0.Add(999 * time.Nanosecond), t0},
		{"microseconds kept", t0.Add(1234 * time.Nanosecond), t0.Add(time.Microsecond)},
		{"other zone to UTC", t0.Add(1500 * time.Nanosecond).In(zone), t0.Add(time.Microsecond)},
		{"before 1970 truncates toward the past", time.Date(1960, 1, 1, 0, 0, 0, 1999, time.UTC),
			time.Date(1960, 1, 1, 0, 0, 0, 1000, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Now(tc.in)
			// == rather than Equal: the location and lack of a monotonic
			// reading are part of the normal form.
			if got != tc.want {
				t.Errorf("Now(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if Now(got) != got {
				t.Errorf("Now is not idempotent on %v", got)
			}
		})
	}
	wall := time.Now() // carries a monotonic reading and the local zone
	if got := Now(wall); got != Now(got) || got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
		t.Errorf("Now(time.Now()) = %v: not UTC microseconds without a monotonic reading", got)
	}
}

func TestIsLive(t *testing.T) {
	r := pending()
	for _, tc := range []struct {
		name string
		r    *Record
		now  time.Time
		want bool
	}{
		{"nil record", nil, t0, false},
		{"before expiry", r, t0, true},
		{"a nanosecond before expiry counts as the microsecond before", r, r.ExpiresAt.Add(-time.Nanosecond), true},
		{"at expiry", r, r.ExpiresAt, false},
		{"after expiry", r, tGone, false},
	} {
		if got := IsLive(tc.r, tc.now); got != tc.want {
			t.Errorf("%s: IsLive = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestApplyLifecycle feeds each decision back in as the stored record, as a
// backend does, through one key's whole life.
func TestApplyLifecycle(t *testing.T) {
	var stored *Record
	step := func(cmd Command, now time.Time, want Outcome, token int64, state State) {
		t.Helper()
		d, err := Apply(stored, cmd, now)
		if err != nil {
			t.Fatalf("%T at %v: %v", cmd, now, err)
		}
		if d.Outcome != want || d.Record.FencingToken != token || d.Record.State != state {
			t.Fatalf("%T at %v: outcome %v token %d state %s, want %v %d %s",
				cmd, now, d.Outcome, d.Record.FencingToken, d.Record.State, want, token, state)
		}
		if d.Write {
			stored = &d.Record
		}
	}
	step(claimCmd(digA, lease), t0, Acquired, 1, Pending)
	step(claimCmd(digA, lease), t0.Add(time.Second), InProgress, 1, Pending)
	step(claimCmd(digA, lease), t0.Add(lease), Acquired, 2, Pending)                      // takeover
	step(rejectCmd(2, retryableRej()), t0.Add(lease+time.Second), 0, 2, Released)         // give up
	step(claimCmd(digA, lease), t0.Add(lease+2*time.Second), Acquired, 3, Pending)        // retry
	step(extendCmd(3, time.Minute), t0.Add(lease+3*time.Second), 0, 3, Pending)           // heartbeat
	step(completeCmd(3, "done"), t0.Add(lease+4*time.Second), 0, 3, Completed)            // finish
	step(claimCmd(digA, lease), t0.Add(time.Hour), AlreadyCompleted, 3, Completed)        // replay
	step(claimCmd(digB, lease), t0.Add(pol.CompletedTTL+time.Hour), Acquired, 4, Pending) // forgotten
	if stored.Attempts != 1 || string(stored.Digest) != string(digB) {
		t.Errorf("after expiry: attempts %d digest %q, want 1 %q", stored.Attempts, stored.Digest, digB)
	}
}

func BenchmarkApplyClaim(b *testing.B) {
	for _, bc := range []struct {
		name   string
		stored *Record
		now    time.Time
	}{
		{"fresh", nil, t0},
		{"in-progress", pending(), t0},
		{"takeover", pending(), tLate},
		{"replay", completed(), tLate},
		{"expired", completed(), tGone},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cmd := claimCmd(digA, lease)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Apply(bc.stored, cmd, bc.now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestApplyCutsEveryTimeToMicroseconds: TTLs may carry nanoseconds (a proto
// Duration does), but records must hold only what stores keep, or a write
// returns a record that differs from what is read back.
func TestApplyCutsEveryTimeToMicroseconds(t *testing.T) {
	odd := Policy{DefaultLeaseTTL: 1500 * time.Nanosecond, CompletedTTL: time.Hour + 7, RejectedTTL: 3, ReleasedTTL: time.Second + 999}
	claimed, err := Apply(nil, ClaimParams{Consumer: "c", Key: "k", Policy: odd}, t0)
	if err != nil {
		t.Fatal(err)
	}
	completed, err := Apply(&claimed.Record, CompleteParams{Consumer: "c", Key: "k", FencingToken: 1, Policy: odd}, t0)
	if err != nil {
		t.Fatal(err)
	}
	rejected, err := Apply(&claimed.Record, RejectParams{Consumer: "c", Key: "k", FencingToken: 1, Policy: odd}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{claimed.Record, completed.Record, rejected.Record} {
		for _, ts := range []time.Time{r.CreatedAt, r.UpdatedAt, r.LeaseExpiresAt, r.ExpiresAt} {
			if ts != Now(ts) {
				t.Errorf("%s record holds %v, finer than a microsecond", r.State, ts)
			}
		}
	}
}

// DeleteRecord's tombstone: a live record expires now and keeps its token,
// anything else is not found.
func TestTombstone(t *testing.T) {
	live := pending()
	d, err := Apply(live, DeleteRecordParams{Consumer: live.Consumer, Key: live.Key}, t0)
	if err != nil || !d.Write {
		t.Fatalf("delete of a live record: %+v, %v", d, err)
	}
	want := *live
	want.ExpiresAt = Now(t0)
	if !reflect.DeepEqual(d.Record, want) {
		t.Errorf("tombstone = %+v, want %+v", d.Record, want)
	}
	for name, stored := range map[string]*Record{"absent": nil, "expired": &d.Record} {
		if _, err := Apply(stored, DeleteRecordParams{}, t0); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete of an %s record: %v, want ErrNotFound", name, err)
		}
	}
}

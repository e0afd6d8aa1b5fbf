package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The paths of decide.go answer and store exactly what store.Apply, the
// model, decides on the row that was there: for stored rows of every kind,
// every kind of command, clock readings on both sides of each of the row's
// boundaries (lease expiry, record expiry), and, for the finishes decided
// on a row the writer holds (heldrows.go), that row as it is stored, as it
// differs from it in any one column, or absent. A claim of a key with no
// row must be one statement, and so must a write decided on the stored
// row as held; any other write, the read and the UPDATE.
func TestFastPathIsApply(t *testing.T) {
	w := openTestWriter(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	checked, fast := 0, 0
	for _, row := range fastPathRows(base) {
		for _, cmd := range fastPathCommands() {
			for _, now := range boundaries(row.rec, base) {
				for _, held := range heldVariants(row.rec) {
					name := fmt.Sprintf("%s/%s/now=%s/held=%s", row.name, commandName(cmd), now.Sub(base), held.name)
					if checkFastPath(t, w, name, row.rec, held.rec, cmd, now) {
						fast++
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d cases, %d in one statement", checked, fast)
	if fast == 0 || fast == checked {
		t.Errorf("%d of %d cases were one statement: the table does not cover both paths", fast, checked)
	}
}

// testPolicy has different retentions so that a wrong TTL shows.
var testPolicy = store.Policy{
	DefaultLeaseTTL: 30 * time.Second,
	CompletedTTL:    time.Hour,
	RejectedTTL:     2 * time.Hour,
	ReleasedTTL:     time.Minute,
}

type fastPathRow struct {
	name string
	rec  *store.Record // nil: no row
}

// fastPathRows are stored rows of every state, with token 3, a lease until
// base+10s and retention until base+70s.
func fastPathRows(base time.Time) []fastPathRow {
	row := func(state store.State, result string, rej *store.Rejection) *store.Record {
		r := &store.Record{
			Consumer: "c", Key: "k", State: state, Digest: []byte("d"), FencingToken: 3, Attempts: 2,
			Owner: "w1", Rejection: rej, CreatedAt: base.Add(-time.Minute), UpdatedAt: base.Add(-time.Second),
			LeaseExpiresAt: base.Add(10 * time.Second), ExpiresAt: base.Add(70 * time.Second),
		}
		if result != "" {
			r.Result = []byte(result)
		}
		return r
	}
	return []fastPathRow{
		{"none", nil},
		{"pending", row(store.Pending, "", nil)},
		// No command leaves a pending row with a rejection or a result; a
		// row restored or written by hand might, and a finish copies them.
		{"pending-with-history", row(store.Pending, "old", &store.Rejection{Reason: "BUSY", Message: "m", Detail: []byte("x"), Retryable: true})},
		{"completed", row(store.Completed, "r", nil)},
		{"rejected", row(store.Rejected, "", &store.Rejection{Reason: "BAD", Message: "m", Detail: []byte("x")})},
		{"released", row(store.Released, "", &store.Rejection{Reason: "BUSY", Retryable: true})},
	}
}

func fastPathCommands() []store.Command {
	claim := func(digest string, lease time.Duration) store.Command {
		return store.ClaimParams{Consumer: "c", Key: "k", Digest: []byte(digest), Owner: "w2", LeaseTTL: lease, Policy: testPolicy}
	}
	complete := func(token int64, result []byte) store.Command {
		return store.CompleteParams{Consumer: "c", Key: "k", FencingToken: token, Result: result, Policy: testPolicy}
	}
	reject := func(token int64, j store.Rejection) store.Command {
		return store.RejectParams{Consumer: "c", Key: "k", FencingToken: token, Rejection: j, Policy: testPolicy}
	}
	extend := func(token int64, lease time.Duration) store.Command {
		return store.ExtendLeaseParams{Consumer: "c", Key: "k", FencingToken: token, LeaseTTL: lease, Policy: testPolicy}
	}
	bad := store.Rejection{Reason: "BAD", Message: "m", Detail: []byte("x")}
	busy := store.Rejection{Reason: "BUSY", Retryable: true}
	return []store.Command{
		claim("d", 0), claim("other", 0), claim("d", 5*time.Second),
		complete(3, []byte("r")), complete(3, []byte("other")), complete(3, nil), complete(3, []byte{}),
		complete(2, []byte("r")), complete(4, []byte("r")),
		reject(3, bad), reject(3, busy), reject(3, store.Rejection{}), reject(2, bad), reject(4, busy),
		extend(3, 0), extend(3, 5*time.Second), extend(2, 0), extend(4, 0),
	}
}

// boundaries are clock readings either side of, and on, the row's lease
// and retention ends.
func boundaries(r *store.Record, base time.Time) []time.Time {
	if r == nil {
		return []time.Time{base}
	}
	var ts []time.Time
	for _, edge := range []time.Time{base, r.LeaseExpiresAt, r.ExpiresAt} {
		ts = append(ts, edge.Add(-time.Microsecond), edge, edge.Add(time.Microsecond))
	}
	return ts
}

func commandName(cmd store.Command) string {
	switch c := cmd.(type) {
	case store.ClaimParams:
		return fmt.Sprintf("claim(%s,%s)", c.Digest, c.LeaseTTL)
	case store.CompleteParams:
		return fmt.Sprintf("complete(%d,%q)", c.FencingToken, c.Result)
	case store.RejectParams:
		return fmt.Sprintf("reject(%d,%s,%t)", c.FencingToken, c.Rejection.Reason, c.Rejection.Retryable)
	case store.ExtendLeaseParams:
		return fmt.Sprintf("extend(%d,%s)", c.FencingToken, c.LeaseTTL)
	}
	return fmt.Sprintf("%T", cmd)
}

// checkFastPath stores row, runs cmd through decideAt at now and compares
// answer and stored row with Apply's. It reports whether cmd was a fresh
// claim in one statement.
func checkFastPath(t *testing.T, w *writer, name string, row, held *store.Record, cmd store.Command, now time.Time) bool {
	t.Helper()
	bg := context.Background()
	inTx(t, w, func() error {
		if _, err := w.conn.ExecContext(bg, `DELETE FROM dedup_records`); err != nil || row == nil {
			return err
		}
		_, err := w.upsertRecord.ExecContext(bg, recordArgs(row)...)
		return err
	})
	// The model sees the row as the store reads it back.
	model := storedRow(t, w)
	want, wantErr := store.Apply(model, cmd, now)

	w.held = nil
	if held != nil {
		w.held = heldRows{{held.Consumer, held.Key}: *held}
	}
	var got store.Decision
	var gotErr error
	before := w.statements
	// Committed whatever the answer, so that a refusal that wrote shows.
	inTx(t, w, func() error { got, gotErr = w.decideAt("c", "k", cmd, now); return nil })
	statements := w.statements - before

	if g, m := answerOf(got, gotErr), answerOf(want, wantErr); !reflect.DeepEqual(g, m) {
		t.Errorf("%s: answered\n%+v\nApply answers\n%+v", name, g, m)
	}
	after := storedRow(t, w)
	wantRow := model
	if wantErr == nil && want.Write {
		wantRow = &want.Record
	}
	if g, m := rowArgs(after), rowArgs(wantRow); !reflect.DeepEqual(g, m) {
		t.Errorf("%s: stored\n%v\nApply stores\n%v", name, g, m)
	}
	_, isClaim := cmd.(store.ClaimParams)
	wantStatements := 0
	switch {
	case isClaim && model == nil:
		wantStatements = 1
	case !isClaim && wantErr == nil && want.Write && held == nil:
		wantStatements = 2
	case !isClaim && wantErr == nil && want.Write && reflect.DeepEqual(rowArgs(held), rowArgs(model)):
		wantStatements = 1
	}
	if wantStatements != 0 && statements != wantStatements {
		t.Errorf("%s: ran %d statements, want %d", name, statements, wantStatements)
	}
	return statements == 1
}

// answer is a decision or error in comparable form.
type answer struct {
	record      []any
	write       bool
	outcome     store.Outcome
	retryAfter  time.Duration
	err         string
	conflictRow []any
}

func answerOf(d store.Decision, err error) answer {
	if err != nil {
		a := answer{err: err.Error()}
		if c, ok := errors.AsType[*store.ConflictError](err); ok {
			a.conflictRow = bytewise(recordArgs(&c.Record))
		}
		return a
	}
	return answer{record: bytewise(recordArgs(&d.Record)), write: d.Write, outcome: d.Outcome, retryAfter: d.RetryAfter}
}

func rowArgs(r *store.Record) []any {
	if r == nil {
		return nil
	}
	return bytewise(recordArgs(r))
}

// bytewise turns the byte columns of args into strings: bytes compare
// bytewise, and SQLite keeps no empty value apart from an absent one (an
// empty result reads back as none).
func bytewise(args []any) []any {
	for i, a := range args {
		if b, ok := a.([]byte); ok {
			args[i] = string(b)
		}
	}
	return args
}

func storedRow(t *testing.T, w *writer) *store.Record {
	t.Helper()
	r, err := scanRecord(w.selectRecord.QueryRowContext(context.Background(), "c", "k"), "c", "k")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// inTx runs fn in a committed transaction on the writer.
func inTx(t testing.TB, w *writer, fn func() error) {
	t.Helper()
	if err := w.write(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// openTestWriter opens a store without group commit and returns its
// writer; fsyncs are off, since no test here crashes.
func openTestWriter(t testing.TB) *writer {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{Sync: SyncNormal, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.w
}

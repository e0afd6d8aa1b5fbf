package store

import "time"

// HeldFinish is a Complete or Reject decided without reading its record,
// for a store that writes it in one statement guarded by the condition
// under which Apply would decide it so: the key's record is live, Pending,
// and at the command's fencing token (HeldBy). That is the finish of a
// holder on time, nearly every finish. A row the guard does not match is
// left alone, and the store decides the command by reading (Apply). The
// decision is Apply's own, taken on a record that meets the guard, and
// TestHeldFinishIsApply holds Onto to Apply for every record that does.
type HeldFinish struct {
	// Token is the fencing token the guard asks of the record.
	Token     int64
	State     State
	Result    []byte
	Rejection *Rejection
	// Updated and Expires are UpdatedAt and ExpiresAt as offsets from the
	// clock reading the store writes at.
	Updated, Expires time.Duration
}

// heldOrigin is the clock reading a HeldFinish is decided at: only the
// differences from it are kept.
var heldOrigin = time.Unix(0, 0).UTC()

// HeldFinishOf decides cmd for its holder, or reports false for a command
// that is not a Complete or Reject or that such a record would refuse or
// answer without a write.
func HeldFinishOf(cmd Command) (HeldFinish, bool) {
	var token int64
	switch c := cmd.(type) {
	case CompleteParams:
		token = c.FencingToken
	case RejectParams:
		token = c.FencingToken
	default:
		return HeldFinish{}, false
	}
	consumer, key := cmd.Target()
	held := Record{Consumer: consumer, Key: key, State: Pending, FencingToken: token,
		ExpiresAt: heldOrigin.Add(time.Hour)}
	d, err := Apply(&held, cmd, heldOrigin)
	if err != nil || !d.Write {
		return HeldFinish{}, false
	}
	r := d.Record
	return HeldFinish{Token: token, State: r.State, Result: r.Result, Rejection: r.Rejection,
		Updated: r.UpdatedAt.Sub(heldOrigin), Expires: r.ExpiresAt.Sub(heldOrigin)}, true
}

// HeldBy is the guard of a HeldFinish of a command at fencing token
// token: stored is live at now, Pending, and at token.
func HeldBy(stored *Record, token int64, now time.Time) bool {
	return IsLive(stored, now) && stored.State == Pending && stored.FencingToken == token
}

// Onto is stored after f at clock now (a normalised reading): the columns
// f names changed, every other one as stored.
func (f HeldFinish) Onto(stored Record, now time.Time) Record {
	stored.State, stored.Result, stored.Rejection = f.State, f.Result, f.Rejection
	stored.UpdatedAt, stored.ExpiresAt = now.Add(f.Updated), now.Add(f.Expires)
	return stored
}

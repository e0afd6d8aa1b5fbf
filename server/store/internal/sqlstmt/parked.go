package sqlstmt

import (
	"strconv"

	"github.com/dedupd/dedupd/server/store"
)

// ParkedEventColumns are a parked event's columns as its reads select
// them, the payload aside.
const ParkedEventColumns = `sequence, digest, payload_bytes, parked_at`

// ParkedEvents reads the parked events of one stream that r names:
// consumer $1, stream $2, sequences $3 (r.From) to $4 (r.To), in sequence
// order, at most r.Limit when it is positive, with ParkedEventColumns and,
// when r.Payloads, the payload last.
func ParkedEvents(r store.ParkedRead) string {
	cols := ParkedEventColumns
	if r.Payloads {
		cols += `, payload`
	}
	q := `SELECT ` + cols + ` FROM dedup_parked WHERE consumer = $1 AND stream = $2 AND sequence BETWEEN $3 AND $4 ORDER BY sequence`
	if r.Limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(r.Limit)
	}
	return q
}

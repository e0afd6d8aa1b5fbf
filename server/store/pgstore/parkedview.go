package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// parkedViewSQL is the one statement that reads what r names of a
// stream's parked events ($1, $2; $3 and $4 r's bounds) together with the
// stream's row_version, so that both are of one snapshot at any
// isolation. Its first row, of sequence 0 (parked sequences are
// positive), is the header: the consumer's parked bytes when r asks for
// them, the stream's oldest parked_at when r asks for it, and the
// row_version (NULL: no row). The events follow, in sequence order.
func parkedViewSQL(r store.ParkedRead) string {
	bytes, oldest, payload := `0::INT8`, `NULL::TIMESTAMPTZ`, `''::BYTEA`
	if r.ConsumerBytes {
		bytes = `(SELECT COALESCE(SUM(payload_bytes), 0) FROM dedup_parked WHERE consumer = $1)::INT8`
	}
	if r.Oldest {
		oldest = `(SELECT MIN(parked_at) FROM dedup_parked WHERE consumer = $1 AND stream = $2)`
	}
	if r.Payloads {
		payload = `payload`
	}
	limit := ""
	if r.Limit > 0 {
		limit = ` LIMIT ` + strconv.Itoa(r.Limit)
	}
	return `SELECT 0::INT8, ''::BYTEA, ` + bytes + `, ` + oldest + `, ''::BYTEA,
    (SELECT row_version FROM dedup_streams WHERE consumer = $1 AND stream = $2)
UNION ALL
SELECT * FROM (
    SELECT sequence, digest, payload_bytes, parked_at, ` + payload + `, NULL::INT8 FROM dedup_parked
    WHERE consumer = $1 AND stream = $2 AND sequence BETWEEN $3 AND $4 ORDER BY sequence` + limit + `
) AS events
ORDER BY 1`
}

// readParkedAt reads what r names of one stream's parked events, as of
// the stream's row at version (0: no row); errConcurrentWrite when the
// row has moved on since it was read.
func (s *Store) readParkedAt(ctx context.Context, consumer, stream string, r store.ParkedRead, version int64) (store.ParkedView, error) {
	rows, err := s.pool.Query(ctx, parkedViewSQL(r), consumer, stream, r.From, r.To)
	if err != nil {
		return store.ParkedView{}, err
	}
	var (
		v       store.ParkedView
		current *int64
		header  bool
	)
	dest, each := parkedViewRow(&v, &current, &header, consumer, stream)
	if _, err = pgx.ForEachRow(rows, dest, each); err != nil {
		return store.ParkedView{}, err
	}
	if !header {
		return store.ParkedView{}, errors.New("parked view: no header row")
	}
	if current == nil && version != 0 || current != nil && *current != version {
		return store.ParkedView{}, errConcurrentWrite
	}
	return v, nil
}

// parkedViewRow scans one row of parkedViewSQL into v: the header's
// figures and row_version (current), or an event.
func parkedViewRow(v *store.ParkedView, current **int64, header *bool, consumer, stream string) ([]any, func() error) {
	var (
		seq, bytes      int64
		digest, payload []byte
		at              *time.Time
		version         *int64
	)
	return []any{&seq, &digest, &bytes, &at, &payload, &version}, func() error {
		if seq == 0 {
			*header, *current, v.ConsumerBytes = true, version, bytes
			if at != nil {
				v.OldestParkedAt = store.Now(*at)
			}
			return nil
		}
		ev := store.ParkedEvent{Consumer: consumer, Stream: stream, Sequence: seq, PayloadBytes: bytes}
		if at != nil {
			ev.ParkedAt = store.Now(*at)
		}
		if len(digest) > 0 {
			ev.Digest = digest
		}
		if len(payload) > 0 {
			ev.Payload = payload
		}
		v.Events = append(v.Events, ev)
		return nil
	}
}

// collectParked reads the rows of a listing of one stream's parked
// events: sequence, digest, payload_bytes and parked_at, then the payload when payloads is set.
func collectParked(rows pgx.Rows, consumer, stream string, payloads bool) ([]store.ParkedEvent, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ParkedEvent, error) {
		ev := store.ParkedEvent{Consumer: consumer, Stream: stream}
		dest := []any{&ev.Sequence, &ev.Digest, &ev.PayloadBytes, &ev.ParkedAt}
		if payloads {
			dest = append(dest, &ev.Payload)
		}
		if err := row.Scan(dest...); err != nil {
			return ev, err
		}
		ev.ParkedAt = store.Now(ev.ParkedAt)
		if len(ev.Digest) == 0 {
			ev.Digest = nil
		}
		if len(ev.Payload) == 0 {
			ev.Payload = nil
		}
		return ev, nil
	})
}

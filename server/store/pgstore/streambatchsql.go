package pgstore

import (
	"fmt"
	"reflect"
	"strings"
)

// The multi-row statements of stream group commit (streambatch.go). They
// take the parameters of the single-row statements (updateStreamAsCachedSQL,
// insertStreamFreshSQL), in the same order, each as an array with one
// element per stream, and write each row exactly as its single-row
// statement would: the same values, the same conditions.

// streamWriteParam is a parameter of a read-free stream write: its name in
// the unnested table u, and its SQL type.
type streamWriteParam struct{ name, sqlType string }

// streamWriteParams are the parameters of a read-free stream write, in the
// order of planStreamUnread's arguments: the 14 columns before the times,
// each time column's copied value and offset (streamTimeValue), the park
// columns, then, for an update, what the expected row must still be.
var streamWriteParams = []streamWriteParam{
	{"consumer", "TEXT"}, {"stream", "TEXT"}, {"mode", "TEXT"}, {"high_water", "INT8"},
	{"last_outcome", "TEXT"}, {"rejection_reason", "TEXT"}, {"rejection_message", "TEXT"},
	{"rejection_detail", "BYTEA"}, {"finished_token", "INT8"}, {"rejected", "INT8"},
	{"in_flight", "INT8"}, {"digest", "BYTEA"}, {"fencing_token", "INT8"}, {"owner", "TEXT"},
	{"lease_expires_at_fixed", "TIMESTAMPTZ"}, {"lease_expires_at_us", "INT8"},
	{"created_at_fixed", "TIMESTAMPTZ"}, {"created_at_us", "INT8"},
	{"updated_at_fixed", "TIMESTAMPTZ"}, {"updated_at_us", "INT8"},
	{"expires_at_fixed", "TIMESTAMPTZ"}, {"expires_at_us", "INT8"},
	{"parked", "INT8"}, {"parked_bytes", "INT8"}, {"skipped", "INT8"}, {"skip_from", "INT8"},
	{"skip_to", "INT8"}, {"skip_cause", "TEXT"}, {"skipped_at", "TIMESTAMPTZ"},
	// An update's only.
	{"expected_version", "INT8"}, {"expected_created_at", "TIMESTAMPTZ"},
	{"expected_updated_at", "TIMESTAMPTZ"}, {"before_expiry", "BOOL"}, {"before_lease", "BOOL"},
}

// streamInsertParams is how many of streamWriteParams an insert takes.
const streamInsertParams = 29

// streamTimeColumns are the time columns, written as the copied time or
// the statement's clock plus the offset.
var streamTimeColumns = map[string]bool{"lease_expires_at": true, "created_at": true, "updated_at": true, "expires_at": true}

var (
	// updateStreamsAsCachedSQL is updateStreamAsCachedSQL for many streams.
	updateStreamsAsCachedSQL = writeOrReadStreams(`UPDATE dedup_streams AS s SET
    `+streamAssignments()+`,
    row_version = s.row_version + 1
FROM `+unnestStreamWrites(len(streamWriteParams))+`
WHERE s.consumer = u.consumer AND s.stream = u.stream AND s.row_version = u.expected_version
  AND s.created_at = u.expected_created_at AND s.updated_at = u.expected_updated_at
  AND (statement_timestamp() < s.expires_at) = u.before_expiry
  AND (statement_timestamp() < s.lease_expires_at) = u.before_lease`,
		qualifiedColumns("s", streamColumns)+", s.row_version")

	// insertStreamsFreshSQL is insertStreamFreshSQL for many streams.
	insertStreamsFreshSQL = writeOrReadStreams(`INSERT INTO dedup_streams (`+streamColumns+`)
SELECT `+strings.Join(streamValues(), ", ")+`
FROM `+unnestStreamWrites(streamInsertParams)+`
ON CONFLICT (consumer, stream) DO NOTHING`,
		streamColumns+", row_version")
)

// writeOrReadStreams is writeOrReadStream for a write of many streams,
// whose RETURNING list is returning (streamColumns and row_version,
// qualified as the write needs): the rows written, then, for every stream
// of the batch the write left alone, its row as the statement read it.
func writeOrReadStreams(write, returning string) string {
	return `WITH written AS (
` + write + `
    RETURNING ` + returning + `
)
SELECT ` + streamColumns + `, row_version, true, statement_timestamp() FROM written
UNION ALL
SELECT ` + qualifiedColumns("d", streamColumns) + `, d.row_version, false, statement_timestamp()
FROM unnest($1::TEXT[], $2::TEXT[]) AS k (consumer, stream)
JOIN dedup_streams AS d ON d.consumer = k.consumer AND d.stream = k.stream
WHERE NOT EXISTS (SELECT 1 FROM written AS w WHERE w.consumer = k.consumer AND w.stream = k.stream)`
}

// streamValues are the values a write gives streamColumns from u, in
// order: the parameter of the column's name, or, for a time, the copied
// time or the statement's clock plus the offset.
func streamValues() []string {
	columns := strings.Split(streamColumns, ",")
	values := make([]string, len(columns))
	for i, c := range columns {
		c = strings.TrimSpace(c)
		values[i] = "u." + c
		if streamTimeColumns[c] {
			values[i] = fmt.Sprintf("COALESCE(u.%[1]s_fixed, statement_timestamp() + u.%[1]s_us * INTERVAL '1 microsecond')", c)
		}
	}
	return values
}

// streamAssignments is the SET list of an update: every column but the
// key (consumer, stream) from its value.
func streamAssignments() string {
	columns, values := strings.Split(streamColumns, ","), streamValues()
	sets := make([]string, 0, len(columns))
	for i, c := range columns[2:] {
		sets = append(sets, strings.TrimSpace(c)+" = "+values[i+2])
	}
	return strings.Join(sets, ",\n    ")
}

// unnestStreamWrites is the table u of the first n of streamWriteParams,
// given as arrays $1..$n.
func unnestStreamWrites(n int) string {
	arrays, names := make([]string, n), make([]string, n)
	for i, p := range streamWriteParams[:n] {
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, p.sqlType)
		names[i] = p.name
	}
	return "unnest(" + strings.Join(arrays, ", ") + ")\n    AS u (" + strings.Join(names, ", ") + ")"
}

// qualifiedColumns is a comma-separated column list with each column
// prefixed by a table alias.
func qualifiedColumns(alias, columns string) string {
	fields := strings.Split(columns, ",")
	for i, f := range fields {
		fields[i] = alias + "." + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// columnArrays turns rows of parameters, all of one shape, into one array
// per parameter, each a slice of the parameter's Go type (pgx encodes a
// nil pointer or nil []byte element as NULL, as it does the parameter
// alone).
func columnArrays(rows [][]any) []any {
	arrays := make([]any, len(rows[0]))
	for j := range arrays {
		column := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(rows[0][j])), len(rows), len(rows))
		for i, row := range rows {
			column.Index(i).Set(reflect.ValueOf(row[j]))
		}
		arrays[j] = column.Interface()
	}
	return arrays
}

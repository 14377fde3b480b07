package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/labpool/labpool/sync/schema"
)

// jobState is the expression of records_job_state (migration 0003): the
// "state" a job record's data names.
const jobState = `(CASE WHEN json_valid(CAST(data AS TEXT)) THEN json_extract(CAST(data AS TEXT), '$.state') END)`

// jobStateOfParam is jobState of a record's data given twice as parameters.
const jobStateOfParam = `(CASE WHEN json_valid(CAST(? AS TEXT)) THEN json_extract(CAST(? AS TEXT), '$.state') END)`

// placeholders is n comma-separated SQL parameters.
func placeholders(n int) string { return "?" + strings.Repeat(",?", n-1) }

// JobsInState returns the job records (schema.KindJob) of every origin
// whose data names one of states as its "state", sorted by origin and key,
// through records_job_state: the other job records are never read.
func (db *DB) JobsInState(ctx context.Context, states ...string) ([]Record, error) {
	if len(states) == 0 {
		return nil, nil
	}
	q := `SELECT ` + recordCols + ` FROM records INDEXED BY records_job_state
		WHERE kind = '` + schema.KindJob + `' AND ` + jobState + ` IN (` + placeholders(len(states)) + `)
		ORDER BY origin, key`
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = s
	}
	recs, err := collect(db.r.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("read the job records in state %s: %w", strings.Join(states, ", "), err)
	}
	return recs, nil
}

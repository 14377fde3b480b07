-- Job records by the state their data names (its top-level "state"), so
-- that a listing of active jobs reads those alone, and never every job
-- record every member ever wrote. Data that SQLite does not read as JSON
-- has no state here.
CREATE INDEX records_job_state ON records (
	(CASE WHEN json_valid(CAST(data AS TEXT)) THEN json_extract(CAST(data AS TEXT), '$.state') END),
	origin, key
) WHERE kind = 'job';

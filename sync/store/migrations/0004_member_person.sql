-- A member is a person with devices (sync/pool): each member row, a
-- device, names its person (the device ID of the person's first device)
-- and the person's name. A device of a pool from before people is the
-- first device of a person of its own, named after it, as sync/pool reads
-- such a pool; the table is rewritten from the log at its next change.
ALTER TABLE members ADD COLUMN person TEXT NOT NULL DEFAULT '';
ALTER TABLE members ADD COLUMN person_name TEXT NOT NULL DEFAULT '';
UPDATE members SET person = id, person_name = name;

-- The record kinds a registration wants (push.Registration.Kinds): a JSON
-- array of patterns, '[]' for every kind.
ALTER TABLE herald_registration ADD COLUMN kinds TEXT NOT NULL DEFAULT '[]';

-- The record kinds a registration wants (push.Registration.Kinds): patterns,
-- empty for every kind.
ALTER TABLE herald_registration ADD COLUMN kinds text[] NOT NULL DEFAULT '{}';

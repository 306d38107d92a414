ALTER TABLE herald_registration DROP COLUMN "window";

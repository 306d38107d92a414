-- How many messages of a registration may be unacknowledged at once
-- (push.Registration.Window); 1 is v1's strict order.
ALTER TABLE herald_registration ADD COLUMN "window" integer NOT NULL DEFAULT 1 CHECK ("window" >= 1);

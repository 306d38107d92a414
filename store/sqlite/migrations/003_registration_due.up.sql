-- Due picks a woken stream's due registrations from this index alone, in
-- claim order within the stream, never reading a row's config (a private
-- key can be 2 KB): with 10,000 lagging registrations a claim read 18 MB.
CREATE INDEX herald_registration_due
    ON herald_registration (stream, namespace, next_attempt_at, id, next_seq, lease_until, host)
    WHERE parked = 0;

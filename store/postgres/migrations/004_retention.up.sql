-- The low-water mark: the oldest seq a stream still retains (head + 1 when
-- it retains none). Records below it were pruned (store.Retention). Not
-- indexed, so that moving it, or the head, stays a HOT update.
ALTER TABLE herald_stream ADD COLUMN oldest_seq bigint NOT NULL DEFAULT 1 CHECK (oldest_seq >= 1);

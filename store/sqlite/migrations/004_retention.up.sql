-- The low-water mark: the oldest seq a stream still retains (head+1 when it
-- retains none). Records below it were pruned (store.Retention).
ALTER TABLE herald_stream ADD COLUMN oldest_seq INTEGER NOT NULL DEFAULT 1;

\set k random(1, 1000000000000000)
BEGIN;
INSERT INTO app_order (id, body) VALUES (:client_id || '-' || :k, convert_to(repeat('x', 256), 'UTF8'));
COMMIT;

\set k random(1, 1000000000000000)
BEGIN;
INSERT INTO app_order (id, body) VALUES (:client_id || '-' || :k, convert_to(repeat('x', 256), 'UTF8'));
INSERT INTO app_outbox (id, stream, kind, payload, digest, appended_at) VALUES (:client_id || '-' || :k, 'order/0', 'order.updated', convert_to(repeat('x', 256), 'UTF8'), sha256(convert_to(:k::text, 'UTF8')), now());
COMMIT;

\set k random(1, 1000000000000000)
BEGIN;
INSERT INTO app_order (id, body) VALUES (:client_id || '-' || :k, convert_to(repeat('x', 256), 'UTF8'));
INSERT INTO rec_full (stream, id, kind, content_type, payload, final, digest, appended_at, traceparent, tracestate) SELECT 'order/0', :client_id || '-' || :k, 'order.updated', 'application/json', convert_to(repeat('x', 256), 'UTF8'), false, sha256(convert_to(:k::text, 'UTF8')), now(), '', '' WHERE NOT EXISTS (SELECT FROM rec_full WHERE stream = 'order/0' AND final) ON CONFLICT (id) DO NOTHING;
COMMIT;

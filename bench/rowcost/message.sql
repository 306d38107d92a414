\set k random(1, 1000000000000000)
BEGIN;
INSERT INTO app_order (id, body) VALUES (:client_id || '-' || :k, convert_to(repeat('x', 256), 'UTF8'));
SELECT pg_logical_emit_message(true, 'herald', convert_to('order/0 ' || :client_id || '-' || :k || ' order.updated application/json ' || repeat('x', 256), 'UTF8'));
COMMIT;

DROP TABLE herald_actor_key;
DROP TABLE herald_token;
DROP TABLE herald_host;
DROP TABLE herald_evidence;
DROP TABLE herald_registration;
DROP TABLE herald_subscription;
DROP TABLE herald_record;
DROP TABLE herald_stream;

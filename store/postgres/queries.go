package postgres

// The migration runner's statements, which name the version table; every
// other statement is in sql/*.sql, by name (stmt).

// The schema's version (migrate.go, readVersion); parameters are numbered
// as passed.
const (
	sqlSchemaProbe = `SELECT current_database(), to_regclass($1::text) IS NOT NULL,
       (SELECT count(*) = 2 FROM pg_attribute
        WHERE attrelid = to_regclass($1::text) AND attnum > 0 AND NOT attisdropped
          AND ((attname = 'version' AND atttypid = 'bigint'::regtype)
            OR (attname = 'dirty' AND atttypid = 'boolean'::regtype))),
       to_regclass('herald_stream') IS NOT NULL OR to_regclass('herald_record') IS NOT NULL
    OR to_regclass('herald_registration') IS NOT NULL OR to_regclass('herald_evidence') IS NOT NULL`
	sqlCurrentVersion = `SELECT version, dirty FROM ` + versionTable + ` LIMIT 1`
	migrationLockKey  = `hashtextextended('herald_schema_migrations', 0)`
	sqlMigrationLock  = `SELECT pg_advisory_xact_lock(` + migrationLockKey + `)`
	sqlCreateVersions = `CREATE TABLE IF NOT EXISTS ` + versionTable + ` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`
	sqlClearVersion   = `DELETE FROM ` + versionTable
	sqlRecordVersion  = `INSERT INTO ` + versionTable + ` (version, dirty) VALUES ($1, false)`
)

// The planner settings of the sequencer's transactions (sql/due.sql).
var sqlPlanner = []string{stmt("planner_seqscan"), stmt("planner_jit"), stmt("planner_generic")}

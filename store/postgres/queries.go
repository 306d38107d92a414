package postgres

// Every SQL statement of the store: those of sql/*.sql by name (sqlfiles.go),
// and the migration runner's own, which name the version table.

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

// The journal (journal.go): sql/journal.sql.
var (
	sqlAppendRows    = stmt("append_rows")
	sqlInsertRecord  = stmt("insert_record")
	sqlLookupIDs     = stmt("lookup_ids")
	sqlHead          = stmt("head")
	sqlFinalSeq      = stmt("final_seq")
	sqlRead          = stmt("read")
	sqlLookupVerdict = stmt("lookup_verdict")
	sqlRefused       = stmt("refused")
)

// The sequencer (sequencer.go): sql/sequencer.sql.
var (
	sqlAnyUnsequenced = stmt("any_unsequenced")
	sqlBegin          = stmt("begin")
	sqlTryLock        = stmt("try_lock")
	sqlWaitLock       = stmt("wait_lock")
	sqlHeld           = stmt("held")
	sqlCommit         = stmt("commit")
	sqlAbort          = stmt("abort")
	sqlNumber         = stmt("number")
	sqlUnnumbered     = stmt("unnumbered")
)

// Registrations (registrations.go): sql/registrations.sql.
var (
	sqlMarkStream         = stmt("mark_stream")
	sqlRegistrationExists = stmt("registration_exists")
	sqlRegistrationMadeBy = stmt("registration_made_by")
	sqlUpsertRegistration = stmt("upsert_registration")
	sqlDeleteRegistration = stmt("delete_registration")
	sqlGet                = stmt("get")
	sqlList               = stmt("list")
	sqlStatsNamespaces    = stmt("stats_namespaces")
	sqlStatsLagging       = stmt("stats_lagging")
	sqlStatsOldestParked  = stmt("stats_oldest_parked")
	sqlResealPage         = stmt("reseal_page")
	sqlReseal             = stmt("reseal")
)

// Due (registrations.go): sql/due.sql.
var (
	sqlPlanner         = []string{stmt("planner_seqscan"), stmt("planner_jit"), stmt("planner_generic")}
	sqlDueAsyncCommit  = stmt("due_async_commit")
	sqlClearCandidates = stmt("clear_candidates")
	sqlClearPending    = stmt("clear_pending")
	sqlPick            = stmt("pick")
	sqlClaim           = stmt("claim")
	sqlUnserved        = stmt("unserved")
)

// Host health (hosts.go, and Due's probes): sql/hosts.sql.
var (
	sqlRenew         = stmt("renew")
	sqlLockProbes    = stmt("lock_probes")
	sqlTroubledHosts = stmt("troubled_hosts")
	sqlMoveProbe     = stmt("move_probe")
	sqlEnsureHost    = stmt("ensure_host")
	sqlHostScheme    = stmt("host_scheme")
	sqlSetHostScheme = stmt("set_host_scheme")
	sqlLockHost      = stmt("lock_host")
	sqlPutHost       = stmt("put_host")
	sqlHoldHost      = stmt("hold_host")
	sqlReleaseHost   = stmt("release_host")
	sqlHosts         = stmt("hosts")
)

// Cursors, failures, operator moves and evidence (cursor.go, hosts.go):
// sql/cursor.sql.
var (
	sqlFence          = stmt("fence")
	sqlAdvance        = stmt("advance")
	sqlCheckpoint     = stmt("checkpoint")
	sqlPace           = stmt("pace")
	sqlRetry          = stmt("retry")
	sqlPark           = stmt("park")
	sqlHostFailed     = stmt("host_failed")
	sqlGenericPlans   = stmt("generic_plans")
	sqlFenceBatch     = stmt("fence_batch")
	sqlAdvanceBatch   = stmt("advance_batch")
	sqlComplete       = stmt("complete")
	sqlUnpark         = stmt("unpark")
	sqlPause          = stmt("pause")
	sqlResume         = stmt("resume")
	sqlMove           = stmt("move")
	sqlInsertEvidence = stmt("insert_evidence")
	sqlTrimEvidence   = stmt("trim_evidence")
	sqlEvidence       = stmt("evidence")
)

// Retention (retention.go): sql/retention.sql.
var (
	sqlPruneCandidates    = stmt("prune_candidates")
	sqlPruneLock          = stmt("prune_lock")
	sqlPruneHolders       = stmt("prune_holders")
	sqlPruneBehind        = stmt("prune_behind")
	sqlExpire             = stmt("expire")
	sqlPruneRefused       = stmt("prune_refused")
	sqlPruneRun           = stmt("prune_run")
	sqlPruneRecords       = stmt("prune_records")
	sqlPruneMark          = stmt("prune_mark")
	sqlPruneStream        = stmt("prune_stream")
	sqlPruneEvidence      = stmt("prune_evidence")
	sqlPruneHosts         = stmt("prune_hosts")
	sqlCountPrunableHosts = stmt("count_prunable_hosts")
	sqlStreams            = stmt("streams")
)

// Resends (resend.go): sql/resend.sql.
var (
	sqlResendFrom   = stmt("resend_from")
	sqlInsertResend = stmt("insert_resend")
	sqlDueResends   = stmt("due_resends")
	sqlRenewResends = stmt("renew_resends")
	sqlResent       = stmt("resent")
)

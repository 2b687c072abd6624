import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { systemClock } from "./clock";
import {
  type Config,
  ConfigError,
  DOCTOR_SETTINGS,
  OPERATOR_SETTINGS,
  SETTINGS,
  type Overrides,
  type SettingName,
  loadConfig,
  loadDoctorConfig,
  loadOperatorConfig,
  secretFlagWarnings,
} from "./config";
import { type DoctorCheck, runDoctor } from "./doctor";
import { engineCheck } from "./doctor/engineCheck";
import { forkEngineChild } from "./engine/engine";
import { operatorChecks } from "./doctor/operator";
import { DATABASE_FILE, databasePath, openStore, startRelay } from "./main";
import { looseModeWarnings } from "./dataFolder";
import { BackupError, backupDatabase, describeSummary, restoreDatabase } from "./store/backup";
import { RecoveryKeyError, createRecoveryKey } from "./auth/recovery";
import { migratePostgres } from "./store/postgres";
import { migrateSqlite } from "./store/sqlite";
import { packageVersion } from "./version";
import { initWorkspace } from "./workspace/init";
import { MODELS_USAGE, modelsCommand } from "./engine/models/command";
import { createModelsHttpGet, loadRegistry, progressReporter, pullClock, resolveModel } from "./engine/models";
import { NODE_LLAMA_CPP_VERSION, engineInstalled, installEngine } from "./engine/install";

const USAGE = `tab-relay: the self-hostable relay behind the Tab inline-completion extension

Usage:
  tab-relay init  --data DIR --workspace SLUG --owner NAME [--name "Display name"] [--json]
  tab-relay serve --data DIR [--port N] [--host H] [options]
  tab-relay start [--data DIR] [options]   initialise DIR on first run (printing the owner key once), then serve
  tab-relay start --model NAME|FILE.gguf [--allow-unverified] [--gpu auto|off]   serve completions from a code model
                   run by the embedded engine (llama.cpp): a NAME from \`models list\` is downloaded once into
                   DIR/models, and the engine (node-llama-cpp) is installed into DIR/engine on first use; serve too
  tab-relay engine install [--data DIR] [--engine-dir DIR] [--gpu cuda,vulkan]   install the embedded engine now
  tab-relay migrate (--data DIR | --database URL)   apply pending schema migrations and exit
  tab-relay keys create [--data DIR | --database URL] (--user ID | --owner) [--workspace SLUG] [--scopes a,b,...]
                   [--name NAME] [--json]   make an API key from the server alone (DIR defaults to ./data, as for
                   start), printed once (scopes default to
                   all the role allows; --owner: the earliest-added owner; --workspace when the database has several)
  (with --database postgres://… instead of --data, init, serve and migrate use PostgreSQL; --redis redis://… shares
   rate limits between relays)
  tab-relay doctor --upstream-url URL [--upstream-model M] [--upstream-api A] [--fim-template T] [--json]
                   check a model server: what it is, the mode and template to use, one short completion through the
                   relay's own code, and the environment lines for serve (the API key from TAB_RELAY_UPSTREAM_API_KEY,
                   never printed); exit 0 when the round trip works, 1 when the server answered but it failed, 2 when
                   nothing answered
  tab-relay doctor --model NAME|FILE.gguf [--engine-dir DIR] [--gpu auto|off] [--fim-template T] [--json]
                   load a model into the embedded engine as start --model would (a NAME must be pulled already):
                   the llama.cpp build in use (CPU, CUDA, Vulkan or Metal), the FIM tokens, and one timed
                   completion; exit 0 when it answers, 1 when the model cannot be loaded or does not answer
  tab-relay doctor [--data DIR | --database URL] [--redis URL] [--host H] [--port N] [--public-url URL] [...]
                   check a deployment (DIR defaults to ./data, as for start), with the settings serve would read: the data folder's permissions, the database
                   (reachable, migrations current), Redis, the public URL against the listen address, the clock
                   against the database's and Redis's, and the webhook guard; each finding says what to fix. With
                   --upstream-url too, the model server first. Exit codes as above; warnings exit 0
  tab-relay backup --data DIR --to FILE [--force]   a consistent copy of the SQLite database while the relay
                   serves (SQLite's online backup), written 0600; --force replaces an existing FILE (PostgreSQL:
                   pg_dump, see docs/operating.md)
  tab-relay restore --from FILE --data DIR [--force]   put a backup in place as DIR's database (DIR 0700, relay.db
                   0600); refuses a folder a relay is serving, and one holding a database unless --force
${MODELS_USAGE}
  tab-relay help | --version

Options (each also readable from its environment variable):
${Object.values(SETTINGS)
  .map((s) => `  --${s.flag.padEnd(22)} ${s.env}`)
  .join("\n")}
`;

/** `--allow-unverified` is a switch; every other setting takes a value. */
const settingFlags = Object.fromEntries(
  Object.values(SETTINGS).map((s) => [s.flag, { type: s.flag === "allow-unverified" ? "boolean" : "string" }] as const),
) as Record<string, { type: "string" | "boolean" }>;
/** The settings `doctor --model` loads the model with, as `start --model` reads them. */
const DOCTOR_ENGINE_SETTINGS = [
  "model",
  "engineDir",
  "engineThreads",
  "engineContext",
  "gpu",
  "modelRegistry",
] as const satisfies readonly SettingName[];
/** `doctor` takes the upstream settings (the model server) and the deployment's (see loadOperatorConfig). */
const DOCTOR_OPTIONS = {
  ...Object.fromEntries(
    [...DOCTOR_SETTINGS, ...OPERATOR_SETTINGS, ...DOCTOR_ENGINE_SETTINGS].map((name) => [
      SETTINGS[name].flag,
      { type: "string" as const },
    ]),
  ),
  json: { type: "boolean" as const },
};
/** `keys create` takes `--owner` as a switch, where `init` takes a name. */
const KEYS_OPTIONS = {
  ...settingFlags,
  user: { type: "string" as const },
  owner: { type: "boolean" as const },
  workspace: { type: "string" as const },
  scopes: { type: "string" as const },
  name: { type: "string" as const },
  json: { type: "boolean" as const },
};

/** `backup` and `restore` read the data folder alone; `--database` is known only to say what to use instead. */
const BACKUP_OPTIONS = {
  data: { type: "string" as const },
  database: { type: "string" as const },
  force: { type: "boolean" as const },
};

function fail(message: string): never {
  process.stderr.write(`tab-relay: ${message}\n`);
  process.exit(2);
}

function overridesFrom(values: Record<string, unknown>): Overrides {
  const overrides: Overrides = {};
  for (const [name, setting] of Object.entries(SETTINGS) as [SettingName, (typeof SETTINGS)[SettingName]][]) {
    const value = values[setting.flag];
    if (typeof value === "string") overrides[name] = value;
    else if (value === true) overrides[name] = "true";
  }
  return overrides;
}

function loadOrExit(overrides: Overrides) {
  try {
    return loadConfig(process.env, overrides);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
}

interface Initialised {
  workspaceSlug: string;
  apiKey: string;
}

async function init(values: Record<string, unknown>, quietJson: boolean): Promise<Initialised> {
  const config = loadOrExit(overridesFrom(values));
  const workspace = typeof values["workspace"] === "string" ? values["workspace"] : undefined;
  const owner = typeof values["owner"] === "string" ? values["owner"] : undefined;
  const missing = [!workspace && "--workspace SLUG", !owner && "--owner NAME"].filter(Boolean);
  if (missing.length > 0) fail(`init needs ${missing.join(" and ")}`);
  const store = await openStore(config);
  try {
    const result = await initWorkspace(store, systemClock, {
      slug: workspace as string,
      name: typeof values["name"] === "string" ? values["name"] : undefined,
      ownerName: owner as string,
      general: true,
    });
    if (quietJson) {
      process.stdout.write(
        `${JSON.stringify({ workspace: result.workspace, user: result.user, api_key: result.apiKey })}\n`,
      );
    } else {
      process.stdout.write(
        [
          `Initialised ${config.databaseUrl ? "the PostgreSQL database" : resolve(config.dataDir)}`,
          `  workspace  ${result.workspace.slug} (${result.workspace.id})`,
          `  owner      ${result.user.name} (${result.user.id})`,
          ...(result.general ? [`  channel    #${result.general.name} (${result.general.id})`] : []),
          "",
          "Owner API key (shown once, it cannot be retrieved again; store it now):",
          "",
          `  ${result.apiKey}`,
          "",
        ].join("\n"),
      );
    }
    return { workspaceSlug: result.workspace.slug, apiKey: result.apiKey };
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  } finally {
    await store.close();
  }
}

/** Applies pending migrations; several relays may run this at once (PostgreSQL serialises them with a lock). */
async function migrate(values: Record<string, unknown>): Promise<void> {
  const config = loadOrExit(overridesFrom(values));
  try {
    if (config.databaseUrl) {
      const applied = await migratePostgres(config.databaseUrl);
      process.stdout.write(applied.length > 0 ? `Applied ${applied.join(", ")}\n` : "The database is up to date\n");
    } else if (existsSync(databasePath(config.dataDir))) {
      const applied = await migrateSqlite(databasePath(config.dataDir));
      const where = resolve(databasePath(config.dataDir));
      process.stdout.write(
        applied.length > 0 ? `Applied ${applied.join(", ")} to ${where}\n` : `${where} is up to date\n`,
      );
    } else {
      // Opening a missing SQLite file would create an empty database: a mistyped path would look up to date.
      fail(
        `migrate: --data: no database at ${resolve(databasePath(config.dataDir))}; check the path (\`tab-relay init\` or \`npm start\` creates one)`,
      );
    }
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
}

/** The folder `start` (and so `npm start`) serves when none is given. */
const START_DATA_DIR = "data";

/**
 * Without --data, --database or their variables, `keys create` and `doctor` work on the folder `start` uses, and say
 * so on stderr (stdout may be JSON).
 */
function defaultToStartFolder(command: string, values: Record<string, unknown>): void {
  const given = (flag: string, env: string) =>
    (typeof values[flag] === "string" && values[flag] !== "") || (process.env[env]?.trim() ?? "") !== "";
  if (given(SETTINGS.dataDir.flag, SETTINGS.dataDir.env) || given(SETTINGS.databaseUrl.flag, SETTINGS.databaseUrl.env))
    return;
  values[SETTINGS.dataDir.flag] = START_DATA_DIR;
  process.stderr.write(
    `tab-relay ${command}: using the data folder ${resolve(START_DATA_DIR)} (the one npm start uses; --data DIR for another)\n`,
  );
}

/** `keys create`: the way back in with nothing but the server, when no one holds a key that can make keys. */
async function keysCreate(values: Record<string, unknown>): Promise<void> {
  defaultToStartFolder("keys create", values);
  const config = loadOrExit(overridesFrom(values));
  const user = typeof values["user"] === "string" ? values["user"] : undefined;
  if ((user !== undefined) === (values["owner"] === true))
    fail("keys create needs exactly one of --user ID and --owner");
  // Opening a missing SQLite file would create an empty database.
  if (!config.databaseUrl && !existsSync(databasePath(config.dataDir)))
    fail(`no database in ${resolve(config.dataDir)}: run \`tab-relay init\` first`);
  let problem: string | undefined;
  const store = await openStore(config);
  try {
    const made = await createRecoveryKey(store, systemClock, {
      workspace: typeof values["workspace"] === "string" ? values["workspace"] : undefined,
      user: user === undefined ? "owner" : { id: user },
      scopes: typeof values["scopes"] === "string" ? values["scopes"].split(",") : undefined,
      name: typeof values["name"] === "string" ? values["name"] : undefined,
    });
    const { workspace, key, secret } = made;
    const person = { id: made.user.id, name: made.user.name, role: made.user.role };
    if (values["json"] === true) {
      const apiKey = { id: key.id, name: key.name, scopes: key.scopes, created_at: key.created_at, secret };
      process.stdout.write(
        `${JSON.stringify({ workspace: { id: workspace.id, slug: workspace.slug, name: workspace.name }, user: person, api_key: apiKey })}\n`,
      );
    } else {
      process.stdout.write(
        [
          `Created an API key in workspace ${workspace.slug} (${workspace.id})`,
          `  user    ${person.name} (${person.id}, ${person.role})`,
          `  key     ${key.name} (${key.id})`,
          `  scopes  ${key.scopes.join(", ")}`,
          "",
          "API key (shown once, it cannot be retrieved again; store it now):",
          "",
          `  ${secret}`,
          "",
        ].join("\n"),
      );
    }
  } catch (error) {
    problem =
      error instanceof RecoveryKeyError
        ? `keys create: ${error.message}`
        : error instanceof Error
          ? error.message
          : String(error);
  } finally {
    await store.close();
  }
  if (problem !== undefined) fail(problem);
}

/** The data folder of `backup` and `restore`: --data, else TAB_RELAY_DATA; PostgreSQL is pg_dump's work. */
function backupDataDir(command: string, values: Record<string, unknown>): string {
  const dataDir =
    typeof values["data"] === "string" && values["data"] !== ""
      ? values["data"]
      : process.env[SETTINGS.dataDir.env]?.trim();
  if (dataDir) return dataDir;
  const postgres = typeof values["database"] === "string" || Boolean(process.env[SETTINGS.databaseUrl.env]?.trim());
  if (postgres)
    fail(
      `${command}: --data: ${command} works on a SQLite data folder; for PostgreSQL use pg_dump and pg_restore (docs/operating.md, Backups and upgrades)`,
    );
  fail(`${command}: --data: give the data folder (--data DIR or ${SETTINGS.dataDir.env})`);
}

const backupDeps = { progress: (line: string) => process.stdout.write(`${line}\n`), now: () => performance.now() };

/** `backup`: see relay/src/store/backup.ts. Mistakes and refusals exit 2 with one line. */
async function backup(values: Record<string, unknown>): Promise<void> {
  const dataDir = backupDataDir("backup", values);
  const to =
    typeof values["to"] === "string" && values["to"] !== ""
      ? values["to"]
      : fail("backup: --to: give the file to write (--to FILE)");
  try {
    const result = await backupDatabase(
      { database: databasePath(dataDir), to, force: values["force"] === true },
      backupDeps,
    );
    process.stdout.write(`Backed up to ${result.path} in ${result.ms} ms: ${describeSummary(result.summary)}\n`);
  } catch (error) {
    fail(
      `backup: ${error instanceof BackupError ? error.message : error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** `restore`: see relay/src/store/backup.ts. Mistakes and refusals exit 2 with one line. */
async function restore(values: Record<string, unknown>): Promise<void> {
  const dataDir = backupDataDir("restore", values);
  const from =
    typeof values["from"] === "string" && values["from"] !== ""
      ? values["from"]
      : fail("restore: --from: give the backup file to restore (--from FILE)");
  try {
    const result = await restoreDatabase(
      { from, dataDir, databaseFile: DATABASE_FILE, force: values["force"] === true },
      backupDeps,
    );
    for (const removed of result.removed)
      process.stdout.write(`Removed ${removed} (it belonged to the database replaced)\n`);
    for (const warning of looseModeWarnings(dataDir, DATABASE_FILE)) process.stdout.write(`Warning: ${warning}\n`);
    const pending =
      result.summary.pending.length > 0
        ? ` \`tab-relay serve\` (or \`tab-relay migrate\`) applies ${result.summary.pending.join(", ")}.`
        : "";
    process.stdout.write(
      `Restored ${result.path}.${pending} Start the relay with: npx tab-relay serve --data ${shellWord(dataDir)}\n`,
    );
  } catch (error) {
    fail(`restore: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Checks the model server when one is given (--upstream-url or its variable), and the deployment when a data folder
 * or database is (--data, --database or theirs); the exit code says how it went (see USAGE).
 */
async function doctor(values: Record<string, unknown>): Promise<void> {
  const given = (name: SettingName) =>
    (overridesFrom(values)[name] ?? process.env[SETTINGS[name].env] ?? "").trim() !== "";
  const upstreamGiven = given("upstreamUrl");
  const modelGiven = given("model");
  // With --model alone, just the model (the data folder only to find a model by name and the engine).
  const modelOnly = modelGiven && !upstreamGiven && !given("dataDir") && !given("databaseUrl");
  // Alone, doctor checks the deployment `npm start` makes; with --upstream-url alone, just the model server.
  if (!upstreamGiven) defaultToStartFolder("doctor", values);
  const overrides = overridesFrom(values);
  const problems: string[] = [];
  const collect = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
      return undefined;
    }
  };
  const operator = modelOnly ? undefined : collect(() => loadOperatorConfig(process.env, overrides));
  const deployment = operator !== undefined || problems.length > 0;
  const upstream =
    upstreamGiven || (!deployment && !modelGiven) ? collect(() => loadDoctorConfig(process.env, overrides)) : undefined;
  const withModel = modelGiven ? collect(() => loadConfig(process.env, overrides)) : undefined;
  if (!upstreamGiven && !deployment && !modelGiven)
    problems.push(
      `or ${SETTINGS.dataDir.env} (--${SETTINGS.dataDir.flag}) or ${SETTINGS.databaseUrl.env} (--${SETTINGS.databaseUrl.flag}): the deployment to check`,
    );
  if (problems.length > 0) fail(new ConfigError(problems).message);
  const operatorMore = operator
    ? await operatorChecks(operator, { clock: systemClock, databaseFile: DATABASE_FILE })
    : undefined;
  let engineMore: DoctorCheck[] = [];
  if (withModel?.engine) {
    let registry;
    try {
      registry = await loadRegistry(withModel.models.registryFile);
    } catch (error) {
      await operatorMore?.close();
      fail(error instanceof Error ? error.message : String(error));
    }
    engineMore = [
      engineCheck({
        engine: withModel.engine,
        dataDir: withModel.dataDir || ".",
        registry,
        fork: forkEngineChild(process.env),
        clock: systemClock,
      }),
    ];
  }
  const more =
    operatorMore || engineMore.length > 0
      ? {
          checks: [...engineMore, ...(operatorMore?.checks ?? [])],
          secrets: operatorMore?.secrets ?? [],
          close: async () => operatorMore?.close(),
        }
      : undefined;
  const code = await runDoctor(
    upstream,
    {
      json: values["json"] === true,
      write: (text) => process.stdout.write(text),
      clock: { now: () => performance.now() },
    },
    more,
  );
  process.exit(code);
}

/** `word` as one shell word, quoted only when it needs to be (the lines printed at start-up are meant to be pasted). */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** What `start` knows that `serve` does not: whether it just initialised the data folder, and which one it serves. */
interface StartRun {
  dataDir: string;
  firstRun: Initialised | undefined;
}

/** The README's first completion: the local engine continues the second `add` with the body of the first. */
const FIRST_COMPLETION_TEXT = "function add(a, b) {\\n  return a + b;\\n}\\nfunction add(a, b) {";

/** The lines `start` adds below `serving on`: a first run's next step, or how to get a key on later ones. */
function startLines(run: StartRun, config: Pick<Config, "databaseUrl">, url: string): string[] {
  if (run.firstRun) {
    const { apiKey, workspaceSlug } = run.firstRun;
    const body = `{"stream":true,"tab_context":{"surface":"code","workspace_slug":"${workspaceSlug}","entity_id":"a.js","document_type":"plaintext","active_text_before_cursor":"${FIRST_COMPLETION_TEXT}"}}`;
    return [
      "",
      "A first completion, from another terminal:",
      `  export KEY=${apiKey}`,
      `  curl -N ${url}/api/v1/tab/chat/completions -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" -d '${body}'`,
    ];
  }
  const where = config.databaseUrl ? `--database "$${SETTINGS.databaseUrl.env}"` : `--data ${shellWord(run.dataDir)}`;
  return [`  owner key  shown on the first run only; to make a new one: npx tab-relay keys create ${where} --owner`];
}

/** What to say when the address cannot be listened on: the port taken (or not ours to take), and how to pick another. */
function listenProblem(error: unknown, config: Pick<Config, "host" | "port">): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why =
    code === "EADDRINUSE"
      ? "is already in use"
      : code === "EACCES"
        ? "needs privileges this process does not have"
        : undefined;
  if (why === undefined) return undefined;
  return `port ${config.port} on ${config.host} ${why}; choose another with --port N (npm start -- --port N) or ${SETTINGS.port.env}=N`;
}

/** Fails before anything is created when the port cannot be listened on (the relay listens only once its store is open). */
async function checkPortFree(config: Pick<Config, "host" | "port">): Promise<void> {
  if (config.port === 0) return;
  const probe = createServer().listen(config.port, config.host);
  try {
    await once(probe, "listening");
  } catch (error) {
    fail(listenProblem(error, config) ?? (error instanceof Error ? error.message : String(error)));
  }
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Started through npm (`npx tab-relay serve`, `npm start`), the relay is npm's child: a signal to npx's pid ends npx
 * but is not passed on, and the relay would keep serving with no process a person can find left to stop. So when npm
 * started it, the relay stops when its parent is gone (it is then re-parented, and process.ppid changes). Started any
 * other way (a unit, nohup, a container), its parent's life is none of its business.
 */
function watchNpmParent(onGone: () => void): NodeJS.Timeout | undefined {
  if (process.env["npm_command"] === undefined) return undefined;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) onGone();
  }, 500);
  timer.unref();
  return timer;
}

/**
 * `--model`: the model's file (a registry name is downloaded once into DATA/models, with progress), and the engine
 * installed into its folder on first use; both before anything listens.
 */
async function prepareEngine(config: Readonly<Config>): Promise<string | undefined> {
  const engine = config.engine;
  if (engine === undefined) return undefined;
  try {
    const registry = await loadRegistry(config.models.registryFile);
    const get = createModelsHttpGet(config.models.proxy);
    let modelPath: string;
    try {
      const { path } = await resolveModel(engine.model, {
        dataDir: config.dataDir || ".",
        allowUnverified: engine.allowUnverified,
        hubUrl: config.models.hubUrl,
        registry,
        get,
        clock: pullClock,
        proxyProblems: config.models.proxyProblems,
        onEvent: progressReporter(engine.model, {
          write: (text) => process.stderr.write(text),
          tty: process.stderr.isTTY === true,
          ...(process.stderr.columns === undefined ? {} : { columns: process.stderr.columns }),
          now: () => pullClock.now(),
        }),
      });
      modelPath = path;
    } finally {
      await get.close();
    }
    if (!(await engineInstalled(engine.dir))) {
      process.stderr.write(
        `Installing the embedded engine (node-llama-cpp ${NODE_LLAMA_CPP_VERSION}, this platform's CPU build, about 84 MB) into ${resolve(engine.dir)}; once only\n`,
      );
      await installEngine(engine.dir, { env: process.env, onLine: (line) => process.stderr.write(`  npm: ${line}\n`) });
    }
    return modelPath;
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
}

async function serve(values: Record<string, unknown>, run?: StartRun): Promise<void> {
  const config = loadOrExit(overridesFrom(values));
  let relay: Awaited<ReturnType<typeof startRelay>>;
  const modelPath = await prepareEngine(config);
  if (config.engine) process.stderr.write(`Loading ${modelPath ?? config.engine.model} into the embedded engine\n`);
  try {
    relay = await startRelay(config, modelPath === undefined ? {} : { modelPath });
  } catch (error) {
    fail(listenProblem(error, config) ?? (error instanceof Error ? error.message : String(error)));
  }
  let stopping = false;
  const stop = (signal: string) => {
    // A terminal's Ctrl+C signals the whole process group, and npm passes the signal on to its child too: the relay
    // gets SIGINT twice. A repeat continues the stop already under way; with process.once it would kill the relay
    // mid-shutdown, leaving relay.pid and SQLite's -wal/-shm files behind.
    if (stopping) return;
    stopping = true;
    clearInterval(parentWatch);
    process.stderr.write(`tab-relay: ${signal}, finishing open streams (up to ${config.shutdownGraceMs} ms)\n`);
    relay.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tab-relay: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM received"));
  process.on("SIGINT", () => stop("SIGINT received"));
  const parentWatch = watchNpmParent(() => stop("the npm process that started the relay ended"));
  // Announced only once the handlers are in place: a supervisor (or a test) that signals as soon as it reads this
  // line must get the graceful stop, not the default exit by signal.
  // The console is served at `/` of the public URL when there is one (behind a proxy), else where the relay listens.
  const consoleUrl = `${config.publicUrl ?? relay.url}/`;
  const lines = [
    `tab-relay serving on ${relay.url} (Ctrl+C to stop)`,
    `  console    ${consoleUrl}`,
    ...(run ? startLines(run, config, relay.url) : []),
  ];
  process.stderr.write(`${lines.join("\n")}\n`);
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === "--version" || command === "-v") {
    process.stdout.write(`tab-relay ${packageVersion()}\n`);
    return;
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE);
    return;
  }
  if (command === "engine") {
    const parsedEngine = parseArgs({
      args: rest.slice(1),
      options: { data: { type: "string" }, "engine-dir": { type: "string" }, gpu: { type: "string" } },
      strict: false,
    });
    const opts = parsedEngine.values as Record<string, string | undefined>;
    if (rest[0] !== "install") fail(`engine: the subcommand is \`engine install\`\n\n${USAGE}`);
    const gpu = opts["gpu"] === undefined ? [] : opts["gpu"].split(",");
    if (!gpu.every((g): g is "cuda" | "vulkan" => g === "cuda" || g === "vulkan"))
      fail("engine install: --gpu: cuda, vulkan or both (cuda,vulkan); the CPU build is always installed");
    const dataDir = opts["data"] ?? process.env[SETTINGS.dataDir.env] ?? "data";
    const dir = opts["engine-dir"] ?? process.env[SETTINGS.engineDir.env] ?? resolve(dataDir, "engine");
    if (await engineInstalled(dir)) {
      process.stdout.write(`The engine (node-llama-cpp ${NODE_LLAMA_CPP_VERSION}) is already installed in ${dir}\n`);
      return;
    }
    process.stderr.write(`Installing node-llama-cpp ${NODE_LLAMA_CPP_VERSION} into ${dir}\n`);
    try {
      await installEngine(dir, {
        env: process.env,
        gpu: gpu,
        onLine: (line) => process.stderr.write(`  npm: ${line}\n`),
      });
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
    }
    process.stdout.write(`Installed the engine in ${dir}\n`);
    return;
  }
  if (command === "models") {
    // Ctrl+C stops a pull cleanly: the part and its sidecar stay, and the next pull resumes.
    const controller = new AbortController();
    process.once("SIGINT", () => controller.abort());
    process.once("SIGTERM", () => controller.abort());
    const code = await modelsCommand(rest, {
      env: process.env,
      stdout: process.stdout,
      stderr: process.stderr,
      signal: controller.signal,
    });
    process.exit(code);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(USAGE);
    return;
  }
  let parsed;
  try {
    // After `keys` comes its subcommand, then its own options.
    const keysCommand = command === "keys";
    if (keysCommand && rest[0] !== "create") fail(`keys: the subcommand is \`keys create\`\n\n${USAGE}`);
    parsed = parseArgs({
      args: keysCommand ? rest.slice(1) : rest,
      options: keysCommand
        ? KEYS_OPTIONS
        : command === "doctor"
          ? DOCTOR_OPTIONS
          : command === "backup"
            ? { ...BACKUP_OPTIONS, to: { type: "string" } }
            : command === "restore"
              ? { ...BACKUP_OPTIONS, from: { type: "string" } }
              : {
                  ...settingFlags,
                  workspace: { type: "string" },
                  owner: { type: "string" },
                  name: { type: "string" },
                  json: { type: "boolean" },
                },
      strict: true,
    });
  } catch (error) {
    fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  }
  const values = parsed.values as Record<string, unknown>;
  for (const warning of secretFlagWarnings(overridesFrom(values)))
    process.stderr.write(`tab-relay: warning: ${warning}\n`);
  switch (command) {
    case "init":
      await init(values, values["json"] === true);
      return;
    case "serve":
      return serve(values);
    case "migrate":
      return migrate(values);
    case "keys":
      return keysCreate(values);
    case "doctor":
      return doctor(values);
    case "backup":
      return backup(values);
    case "restore":
      return restore(values);
    case "start": {
      const dataDir =
        typeof values["data"] === "string" ? values["data"] : (process.env[SETTINGS.dataDir.env] ?? "data");
      values["data"] = dataDir;
      let firstRun: Initialised | undefined;
      if (!existsSync(databasePath(dataDir))) {
        // A port clash found after init would leave a new folder behind and its key printed for nothing.
        await checkPortFree(loadOrExit(overridesFrom(values)));
        process.stdout.write("First run: creating the data folder, a workspace and its owner.\n");
        firstRun = await init(
          {
            ...values,
            workspace: values["workspace"] ?? process.env["TAB_RELAY_WORKSPACE"] ?? "default",
            owner: values["owner"] ?? process.env["TAB_RELAY_OWNER"] ?? "Owner",
          },
          false,
        );
      }
      return serve(values, { dataDir, firstRun });
    }
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

await main();

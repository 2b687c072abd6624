import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { systemClock } from "./clock";
import { ConfigError, SETTINGS, type Overrides, type SettingName, loadConfig, secretFlagWarnings } from "./config";
import { databasePath, openStore, startRelay } from "./main";
import { migratePostgres } from "./store/postgres";
import { initWorkspace } from "./workspace/init";

const USAGE = `tab-relay: the self-hostable relay behind the Tab inline-completion extension

Usage:
  tab-relay init  --data DIR --workspace SLUG --owner NAME [--name "Display name"] [--json]
  tab-relay serve --data DIR [--port N] [--host H] [options]
  tab-relay start [--data DIR] [options]   initialise DIR on first run (printing the owner key once), then serve
  tab-relay migrate (--data DIR | --database URL)   apply pending schema migrations and exit
  (with --database postgres://… instead of --data, init, serve and migrate use PostgreSQL; --redis redis://… shares
   rate limits between relays)
  tab-relay help | --version

Options (each also readable from its environment variable):
${Object.values(SETTINGS)
  .map((s) => `  --${s.flag.padEnd(22)} ${s.env}`)
  .join("\n")}
`;

const settingFlags = Object.fromEntries(Object.values(SETTINGS).map((s) => [s.flag, { type: "string" as const }]));

function fail(message: string): never {
  process.stderr.write(`tab-relay: ${message}\n`);
  process.exit(2);
}

function overridesFrom(values: Record<string, unknown>): Overrides {
  const overrides: Overrides = {};
  for (const [name, setting] of Object.entries(SETTINGS) as [SettingName, (typeof SETTINGS)[SettingName]][]) {
    const value = values[setting.flag];
    if (typeof value === "string") overrides[name] = value;
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

async function init(values: Record<string, unknown>, quietJson: boolean): Promise<void> {
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
    });
    if (quietJson) {
      process.stdout.write(`${JSON.stringify({ workspace: result.workspace, user: result.user, api_key: result.apiKey })}\n`);
    } else {
      process.stdout.write(
        [
          `Initialised ${config.databaseUrl ? "the PostgreSQL database" : resolve(config.dataDir)}`,
          `  workspace  ${result.workspace.slug} (${result.workspace.id})`,
          `  owner      ${result.user.name} (${result.user.id})`,
          "",
          "Owner API key (shown once, it cannot be retrieved again; store it now):",
          "",
          `  ${result.apiKey}`,
          "",
        ].join("\n"),
      );
    }
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
    } else {
      await (await openStore(config)).close();
      process.stdout.write(`${resolve(databasePath(config.dataDir))} is up to date\n`);
    }
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
}

async function serve(values: Record<string, unknown>): Promise<void> {
  const config = loadOrExit(overridesFrom(values));
  let relay: Awaited<ReturnType<typeof startRelay>>;
  try {
    relay = await startRelay(config);
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  process.stderr.write(`tab-relay serving on ${relay.url} (Ctrl+C to stop)\n`);
  const stop = (signal: string) => {
    process.stderr.write(`tab-relay: ${signal} received, finishing open streams (up to ${config.shutdownGraceMs} ms)\n`);
    relay.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tab-relay: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === "--version" || command === "-v") {
    process.stdout.write("tab-relay 0.1.0\n");
    return;
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...settingFlags, workspace: { type: "string" }, owner: { type: "string" }, name: { type: "string" }, json: { type: "boolean" } },
      strict: true,
    });
  } catch (error) {
    fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  }
  const values = parsed.values as Record<string, unknown>;
  for (const warning of secretFlagWarnings(overridesFrom(values))) process.stderr.write(`tab-relay: warning: ${warning}\n`);
  switch (command) {
    case "init":
      return init(values, values["json"] === true);
    case "serve":
      return serve(values);
    case "migrate":
      return migrate(values);
    case "start": {
      const dataDir = typeof values["data"] === "string" ? values["data"] : (process.env[SETTINGS.dataDir.env] ?? "data");
      values["data"] = dataDir;
      if (!existsSync(databasePath(dataDir))) {
        process.stdout.write("First run: creating the data folder, a workspace and its owner.\n");
        await init(
          {
            ...values,
            workspace: values["workspace"] ?? process.env["TAB_RELAY_WORKSPACE"] ?? "default",
            owner: values["owner"] ?? process.env["TAB_RELAY_OWNER"] ?? "Owner",
          },
          false,
        );
      }
      return serve(values);
    }
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

await main();

import assert from "node:assert/strict";
import { type ChildProcess, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import SqliteDatabase from "better-sqlite3";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import { Webhook } from "standardwebhooks";
import pg from "pg";
import { completionBody } from "../support/relayHarness";
import { type CommandRun as Run, type RelayProcess, runCommand, spawnRelay, until } from "../support/relayProcess";
import { createDatabase, dropDatabases, postgresProblem } from "../support/scaleOutServices";
import {
  type ReceivedDelivery,
  type WebhookReceiver,
  answerWith,
  startWebhookReceiver,
} from "../support/webhookReceiver";

/**
 * `tab-relay backup` and `restore` as an operator runs them: the relay serves as its own process while completions
 * and posts keep coming and its agent's webhook receiver is down (so the outbox holds pending events), a backup is
 * taken by another process meanwhile, and the backup is restored into a new folder that a new relay then serves.
 * Runs the built CLI (`relay/bin/tab-relay.js`), as the other CLI tests do: needs a fresh `npm run build -w relay`.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "relay/bin/tab-relay.js");
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
const relayEnv = {
  ...baseEnv,
  TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true",
  // Every event keeps failing while the receiver is down, and has retries left long after the test is over.
  TAB_RELAY_WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => "1500").join(","),
  TAB_RELAY_RATE_LIMITS: "reads=100000,writes=100000",
  TAB_RELAY_LOG_LEVEL: "warn",
};
/** Long posts, so the database spans several backup steps (a step is at least 256 pages). */
const POST_TEXT = "lorem ipsum dolor sit amet ".repeat(250);
/** Posted before the backup starts; every third one mentions the agent. */
const POSTS_BEFORE_BACKUP = 90;

/** Runs a command without blocking this process, whose load must go on while it runs. */
function run(command: string, args: string[]): Promise<Run> {
  return runCommand(command, args, { cwd: ROOT, env: relayEnv, killAfterMs: 60_000 });
}

function cli(args: string[]): Promise<Run> {
  return run(process.execPath, [BIN, ...args]);
}

/** Exit 2, nothing on stdout and one line on stderr, which is returned. */
function refusal(run: Run): string {
  assert.equal(run.status, 2, run.stdout + run.stderr);
  assert.equal(run.stdout, "");
  const lines = run.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, run.stderr);
  return lines[0] as string;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];
const receivers: WebhookReceiver[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tab-relay-backup-"));
  dirs.push(dir);
  return dir;
}

/** `target`: a data folder, or `--database URL`. */
function serve(...target: string[]): Promise<RelayProcess> {
  const where = target.length === 1 ? ["--data", ...target] : target;
  return spawnRelay({
    name: `relay on ${where.join(" ")}`,
    args: [BIN, "serve", ...where, "--port", "0", "--host", "127.0.0.1"],
    cwd: ROOT,
    env: relayEnv,
    tracked: children,
    startTimeoutMs: 20_000,
    outputChars: 8_000,
  });
}

async function stop(relay: RelayProcess): Promise<void> {
  relay.child.kill("SIGTERM");
  assert.equal(await relay.exited, 0, relay.output());
}

async function request(
  relay: RelayProcess,
  key: string,
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<Response> {
  return fetch(`${relay.url}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: {
      Authorization: `Bearer ${key}`,
      ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

async function call<T>(
  relay: RelayProcess,
  key: string,
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<T> {
  const response = await request(relay, key, path, init);
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

interface Message {
  id: string;
  text: string;
}

/** Every message of the channel, oldest first. */
async function channelMessages(relay: RelayProcess, key: string, channelId: string): Promise<Message[]> {
  const all: Message[] = [];
  for (let before: string | undefined; ;) {
    const page = await call<Message[]>(
      relay,
      key,
      `/conversations/channel/${channelId}/messages?limit=100${before ? `&before=${before}` : ""}`,
    );
    all.push(...page);
    if (page.length < 100) return all.reverse();
    before = page.at(-1)?.id;
  }
}

interface OutboxRow {
  id: string;
  status: string;
  payload: string;
}

function outbox(databaseFile: string): OutboxRow[] {
  const db = new SqliteDatabase(databaseFile, { readonly: true });
  try {
    return db.prepare("select id, status, payload from events order by id").all() as OutboxRow[];
  } finally {
    db.close();
  }
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Why PostgreSQL's client tools cannot run here, if they cannot. */
function pgToolsProblem(): string | undefined {
  for (const tool of ["pg_dump", "pg_restore"]) {
    const version = spawnSync(tool, ["--version"], { encoding: "utf8" });
    if (version.status !== 0) return `${tool} is not on the PATH (${version.error?.message ?? version.stderr.trim()})`;
  }
  return undefined;
}

describe("tab-relay backup and restore", () => {
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    await Promise.all(receivers.map((receiver) => receiver.close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test("a backup taken while completions and posts keep coming restores into a new folder that serves the same keys, the conversation as it was, and delivers the events that were pending", async () => {
    const receiver = await startWebhookReceiver(answerWith(503, {}, "down for maintenance"));
    receivers.push(receiver);
    const data = join(tempDir(), "data");
    const init = await cli(["init", "--data", data, "--workspace", "acme", "--owner", "Olive", "--json"]);
    assert.equal(init.status, 0, init.stderr);
    const ownerKey = (JSON.parse(init.stdout) as { api_key: string }).api_key;
    const original = await serve(data);

    const member = await call<{ user: { id: string }; api_key: { secret: string } }>(original, ownerKey, "/users", {
      method: "POST",
      json: { name: "Mo", role: "member" },
    });
    const revoked = await call<{ id: string; secret: string }>(original, ownerKey, "/api-keys", {
      method: "POST",
      json: { name: "old laptop", scopes: ["tab.complete"] },
    });
    await call(original, ownerKey, `/api-keys/${revoked.id}`, { method: "DELETE" });
    const agent = await call<{ agent: { id: string }; token: string; signing_secret: string }>(
      original,
      ownerKey,
      "/agents",
      { method: "POST", json: { name: "Backupbot", webhook_url: receiver.url } },
    );
    const channel = await call<{ id: string }>(original, ownerKey, "/channels", {
      method: "POST",
      json: { name: "ops" },
    });
    await call(original, ownerKey, `/channels/${channel.id}/members`, {
      method: "POST",
      json: { agent_id: agent.agent.id },
    });
    await call(original, ownerKey, `/channels/${channel.id}/members`, {
      method: "POST",
      json: { user_id: member.user.id },
    });

    // The load: one writer posting in order (so what the backup holds can be compared with what was posted) and
    // completions alongside, until the backup is done.
    const posted: Message[] = [];
    let loading = true;
    const posts = (async () => {
      for (let n = 0; loading; n++) {
        const text = `${n % 3 === 0 ? "@Backupbot " : ""}post ${n}: ${POST_TEXT}`;
        posted.push(
          await call<Message>(
            original,
            n % 2 === 0 ? ownerKey : member.api_key.secret,
            `/conversations/channel/${channel.id}/messages`,
            { method: "POST", json: { text } },
          ),
        );
      }
    })();
    let completions = 0;
    const completing = (async () => {
      while (loading) {
        const response = await request(original, member.api_key.secret, "/tab/chat/completions", {
          method: "POST",
          json: completionBody(),
        });
        assert.equal(response.status, 200, await response.text());
        completions++;
      }
    })();
    await until(
      `${POSTS_BEFORE_BACKUP} posts`,
      60_000,
      () => (posted.length >= POSTS_BEFORE_BACKUP ? true : undefined),
      20,
    );

    const backupFile = join(tempDir(), "relay-backup.db");
    const postedBefore = posted.length;
    const backup = await cli(["backup", "--data", data, "--to", backupFile]);
    const postedAfter = posted.length;
    loading = false;
    await Promise.all([posts, completing]);
    assert.equal(backup.status, 0, backup.stdout + backup.stderr);
    assert.ok(postedAfter > postedBefore, "posts went on while the backup ran");
    assert.ok(completions > 0);
    const backupLines = backup.stdout.trimEnd().split("\n");
    assert.match(
      backupLines[0] ?? "",
      new RegExp(`^Backing up ${join(data, "relay.db")} \\(\\d+\\.\\d (KiB|MiB)\\) to ${backupFile}$`),
    );
    assert.match(backup.stdout, /^ {2}copied (\d+) of \1 pages \(100%\)$/m);
    assert.match(
      backupLines.at(-1) ?? "",
      new RegExp(
        `^Backed up to ${backupFile} in \\d+ ms: workspace acme; migrations up to 0008_tab_usage_next_edits; \\d+\\.\\d (KiB|MiB)$`,
      ),
    );
    assert.equal(mode(backupFile), "600");

    // Restoring over the folder the relay is serving is refused, naming the process.
    assert.match(
      refusal(await cli(["restore", "--from", backupFile, "--data", data, "--force"])),
      new RegExp(
        `^tab-relay: restore: --data: a relay \\(process ${original.child.pid}\\) is serving ${data}; stop it before restoring into this folder$`,
      ),
    );
    await stop(original);

    const restoredData = join(tempDir(), "new", "data");
    const restore = await cli(["restore", "--from", backupFile, "--data", restoredData]);
    assert.equal(restore.status, 0, restore.stdout + restore.stderr);
    assert.match(
      restore.stdout,
      new RegExp(
        `^Checked ${backupFile}: integrity ok; workspace acme; migrations up to 0008_tab_usage_next_edits; `,
        "m",
      ),
    );
    assert.match(
      restore.stdout,
      new RegExp(
        `^Restored ${join(restoredData, "relay.db")}\\. Start the relay with: npx tab-relay serve --data ${restoredData}$`,
        "m",
      ),
    );
    assert.deepEqual([mode(restoredData), mode(join(restoredData, "relay.db"))], ["700", "600"]);
    assert.deepEqual(readdirSync(restoredData), ["relay.db"]);

    // The outbox as restored: an event per mention the backup holds, none delivered (the receiver was down).
    const pending = outbox(join(restoredData, "relay.db"));
    assert.ok(pending.length > 0);
    assert.ok(
      pending.every((event) => event.status === "pending"),
      JSON.stringify(pending.map((event) => event.status)),
    );

    receiver.answer(answerWith(204));
    const deliveredFrom = receiver.deliveries.length;
    const restored = await serve(restoredData);

    // The same keys: the owner's and the member's work, the revoked one stays revoked, the agent's token works.
    assert.equal((await call<{ user: { name: string } }>(restored, ownerKey, "/me")).user.name, "Olive");
    assert.equal(
      (await call<{ user: { id: string } }>(restored, member.api_key.secret, "/me")).user.id,
      member.user.id,
    );
    assert.equal((await request(restored, revoked.secret, "/me")).status, 401);
    assert.equal(
      (await call<{ agent: { id: string } }>(restored, agent.token, "/agent-api/me")).agent.id,
      agent.agent.id,
    );

    // The conversation as it was at one moment of the backup: the posts up to some point, in order, texts intact.
    const messages = await channelMessages(restored, ownerKey, channel.id);
    assert.ok(
      messages.length >= postedBefore && messages.length <= postedAfter,
      `${messages.length} messages; ${postedBefore} were posted before the backup began and ${postedAfter} by its end`,
    );
    assert.deepEqual(
      messages.map((m) => [m.id, m.text]),
      posted.slice(0, messages.length).map((m) => [m.id, m.text]),
    );
    const mentions = messages.filter((m) => m.text.startsWith("@Backupbot "));
    assert.equal(pending.length, mentions.length, "one pending event per mention in the backup");

    // The pending events go out once the receiver is up, signed with the agent's signing secret as it was.
    await until("every pending event to be delivered", 30_000, () => {
      const seen = new Set(
        receiver.deliveries
          .slice(deliveredFrom)
          .filter((d) => d.headers["webhook-id"])
          .map((d) => d.headers["webhook-id"]),
      );
      return pending.every((event) => seen.has(event.id)) || undefined;
    });
    const verifier = new Webhook(agent.signing_secret);
    const delivered = receiver.deliveries.slice(deliveredFrom).map((delivery: ReceivedDelivery) => {
      const headers = {
        "webhook-id": String(delivery.headers["webhook-id"]),
        "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
        "webhook-signature": String(delivery.headers["webhook-signature"]),
      };
      verifier.verify(delivery.body, headers);
      return JSON.parse(delivery.body) as MessageCreatedEvent;
    });
    assert.deepEqual([...new Set(delivered.map((event) => event.message.id))].sort(), mentions.map((m) => m.id).sort());
    await until("the outbox to show every event delivered", 10_000, () =>
      outbox(join(restoredData, "relay.db")).every((event) => event.status === "delivered") ? true : undefined,
    );
    await stop(restored);
  });

  test("PostgreSQL: pg_dump while a relay serves and posts keep coming, then pg_restore into a new database, serves the same keys and conversation and delivers the pending events", async (t) => {
    const problem = (await postgresProblem()) ?? pgToolsProblem();
    if (problem) {
      console.error(`SKIPPED: ${problem}: the pg_dump and pg_restore test did not run`);
      return t.skip(problem);
    }
    const source = await createDatabase("tab_relay_backup");
    const target = await createDatabase("tab_relay_restored");
    try {
      const receiver = await startWebhookReceiver(answerWith(503, {}, "down for maintenance"));
      receivers.push(receiver);
      const init = await cli(["init", "--database", source.url, "--workspace", "acme", "--owner", "Olive", "--json"]);
      assert.equal(init.status, 0, init.stderr);
      const ownerKey = (JSON.parse(init.stdout) as { api_key: string }).api_key;
      const original = await serve("--database", source.url);
      const agent = await call<{ agent: { id: string }; token: string; signing_secret: string }>(
        original,
        ownerKey,
        "/agents",
        { method: "POST", json: { name: "Backupbot", webhook_url: receiver.url } },
      );
      const channel = await call<{ id: string }>(original, ownerKey, "/channels", {
        method: "POST",
        json: { name: "ops" },
      });
      await call(original, ownerKey, `/channels/${channel.id}/members`, {
        method: "POST",
        json: { agent_id: agent.agent.id },
      });

      const posted: Message[] = [];
      let loading = true;
      const posts = (async () => {
        for (let n = 0; loading; n++) {
          posted.push(
            await call<Message>(original, ownerKey, `/conversations/channel/${channel.id}/messages`, {
              method: "POST",
              json: { text: `${n % 3 === 0 ? "@Backupbot " : ""}post ${n}` },
            }),
          );
        }
      })();
      await until("30 posts", 60_000, () => (posted.length >= 30 ? true : undefined), 20);
      const dumpFile = join(tempDir(), "tab-relay.dump");
      const postedBefore = posted.length;
      // docs/operating.md gives these commands.
      const dump = await run("pg_dump", [
        "--format=custom",
        "--no-owner",
        "--no-privileges",
        `--file=${dumpFile}`,
        `--dbname=${source.url}`,
      ]);
      const postedAfter = posted.length;
      loading = false;
      await posts;
      assert.equal(dump.status, 0, dump.stderr);
      await stop(original);

      const restore = await run("pg_restore", [
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        `--dbname=${target.url}`,
        dumpFile,
      ]);
      assert.equal(restore.status, 0, restore.stderr);
      const client = new pg.Client({ connectionString: target.url });
      await client.connect();
      const pending = await client
        .query<{ id: string; status: string }>("select id, status from events order by id")
        .finally(() => client.end());
      assert.ok(
        pending.rows.length > 0 && pending.rows.every((row) => row.status === "pending"),
        JSON.stringify(pending.rows),
      );

      receiver.answer(answerWith(204));
      const deliveredFrom = receiver.deliveries.length;
      const restored = await serve("--database", target.url);
      assert.equal((await call<{ user: { name: string } }>(restored, ownerKey, "/me")).user.name, "Olive");
      assert.equal(
        (await call<{ agent: { id: string } }>(restored, agent.token, "/agent-api/me")).agent.id,
        agent.agent.id,
      );
      const messages = await channelMessages(restored, ownerKey, channel.id);
      assert.ok(
        messages.length >= postedBefore && messages.length <= postedAfter,
        `${messages.length} messages; ${postedBefore} before the dump began and ${postedAfter} by its end`,
      );
      assert.deepEqual(
        messages.map((m) => [m.id, m.text]),
        posted.slice(0, messages.length).map((m) => [m.id, m.text]),
      );
      assert.equal(pending.rows.length, messages.filter((m) => m.text.startsWith("@Backupbot ")).length);
      // An event the dump caught mid-attempt is claimed until its lease lapses (the webhook timeout plus 10 s).
      await until("every pending event to be delivered", 60_000, () => {
        const seen = new Set(receiver.deliveries.slice(deliveredFrom).map((d) => d.headers["webhook-id"]));
        return pending.rows.every((event) => seen.has(event.id)) || undefined;
      });
      const verifier = new Webhook(agent.signing_secret);
      for (const delivery of receiver.deliveries.slice(deliveredFrom)) {
        verifier.verify(delivery.body, {
          "webhook-id": String(delivery.headers["webhook-id"]),
          "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
          "webhook-signature": String(delivery.headers["webhook-signature"]),
        });
      }
      await stop(restored);
    } finally {
      await dropDatabases([source.name, target.name]);
    }
  });

  test("mistakes and refusals exit 2 with one line naming the flag", async () => {
    const dir = tempDir();
    const data = join(dir, "data");
    assert.equal((await cli(["init", "--data", data, "--workspace", "acme", "--owner", "Olive"])).status, 0);
    const file = join(dir, "backup.db");
    assert.equal((await cli(["backup", "--data", data, "--to", file])).status, 0);

    assert.equal(
      refusal(await cli(["backup", "--data", data, "--to", file])),
      `tab-relay: backup: --to: ${file} exists; pass --force to replace it`,
    );
    assert.equal(
      refusal(await cli(["backup", "--data", data])),
      "tab-relay: backup: --to: give the file to write (--to FILE)",
    );
    assert.equal(
      refusal(await cli(["backup", "--data", join(dir, "nothing"), "--to", join(dir, "x.db")])),
      `tab-relay: backup: --data: no database at ${join(dir, "nothing", "relay.db")}: is this the data folder \`tab-relay serve --data\` uses?`,
    );
    assert.match(
      refusal(await cli(["backup", "--database", "postgres://127.0.0.1/tab", "--to", join(dir, "x.db")])),
      /^tab-relay: backup: --data: backup works on a SQLite data folder; for PostgreSQL use pg_dump and pg_restore/,
    );
    assert.equal(
      refusal(await cli(["restore", "--from", file, "--data", data])),
      `tab-relay: restore: --data: ${data} already holds a database (relay.db); pass --force to replace it`,
    );
    writeFileSync(join(dir, "notes.txt"), "hello ".repeat(200));
    assert.equal(
      refusal(await cli(["restore", "--from", join(dir, "notes.txt"), "--data", join(dir, "other")])),
      `tab-relay: restore: --from: ${join(dir, "notes.txt")} is not a SQLite database (file is not a database)`,
    );
    assert.equal(existsSync(join(dir, "other")), false);
    assert.match(
      refusal(await cli(["restore", "--from", file])),
      /^tab-relay: restore: --data: give the data folder \(--data DIR or TAB_RELAY_DATA\)$/,
    );
    assert.match(
      (await cli(["backup", "--data", data, "--to", file, "--from", file])).stderr,
      /^tab-relay: Unknown option '--from'/,
    );

    const forced = await cli(["restore", "--from", file, "--data", data, "--force"]);
    assert.equal(forced.status, 0, forced.stderr);
  });
});

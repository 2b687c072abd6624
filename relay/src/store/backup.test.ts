import assert from "node:assert/strict";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import { LOCK_FILE } from "../dataFolder";
import { BackupError, backupDatabase, restoreDatabase } from "./backup";
import { openSqliteStore } from "./sqlite";

/** Real database files in a temporary folder; the relay's own schema, with rows written the way a relay writes them (WAL). */

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** A tab-relay database with `workspaces` rows of about 1 KiB each, so it spans many pages. */
async function relayDatabase(path: string, workspaces: number): Promise<void> {
  await (await openSqliteStore(path)).close();
  const db = new SqliteDatabase(path);
  db.pragma("journal_mode = WAL");
  const insert = db.prepare("insert into workspaces (id, slug, name, created_at) values (?, ?, ?, ?)");
  db.transaction(() => {
    for (let n = 0; n < workspaces; n++)
      insert.run(`wsp_${n}`, `ws-${String(n).padStart(5, "0")}`, "x".repeat(1000), "2026-01-01T00:00:00.000Z");
  })();
  db.close();
}

function slugs(path: string): string[] {
  const db = new SqliteDatabase(path, { readonly: true });
  try {
    return (db.prepare("select slug from workspaces order by slug").all() as { slug: string }[]).map((row) => row.slug);
  } finally {
    db.close();
  }
}

describe("tab-relay backup", () => {
  let dir: string;
  let lines: string[];
  const deps = () => ({ progress: (line: string) => lines.push(line), now: () => 0 });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tab-relay-backup-"));
    lines = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("copies the database into one private, self-contained file and reports what it holds", async () => {
    const database = join(dir, "relay.db");
    await relayDatabase(database, 30);
    const to = join(dir, "copy.db");
    const result = await backupDatabase({ database, to, force: false }, deps());
    assert.equal(result.path, to);
    assert.equal(mode(to), "600");
    assert.deepEqual(slugs(to), slugs(database));
    assert.equal(result.summary.workspaces.length, 30);
    assert.deepEqual(result.summary.pending, []);
    assert.equal(result.summary.migrations.at(-1), "0008_tab_usage_next_edits");
    const copy = new SqliteDatabase(to, { readonly: true });
    assert.equal(copy.pragma("journal_mode", { simple: true }), "delete", "no -wal file is needed to read it");
    copy.close();
    assert.deepEqual(
      readdirSync(dir).sort(),
      ["copy.db", "relay.db", "relay.db-shm", "relay.db-wal"].filter((name) => existsSync(join(dir, name))).sort(),
      "no partial file is left",
    );
    assert.match(lines[0] ?? "", /^Backing up .*relay\.db \(\d+\.\d KiB\) to .*copy\.db$/);
    assert.match(lines.at(-1) ?? "", /^ {2}copied (\d+) of \1 pages \(100%\)$/);
  });

  test("a database written to between steps is copied whole and consistent: the backup switches to one pass instead of restarting forever", async () => {
    const database = join(dir, "relay.db");
    await relayDatabase(database, 3000);
    // Another connection, as the serving relay is: it writes whenever the backup reports a step.
    const relay = new SqliteDatabase(database);
    relay.pragma("journal_mode = WAL");
    let written = 0;
    const insert = relay.prepare("insert into workspaces (id, slug, name, created_at) values (?, ?, ?, ?)");
    const result = await backupDatabase(
      { database, to: join(dir, "copy.db"), force: false },
      {
        now: () => 0,
        progress(line) {
          lines.push(line);
          insert.run(`wsp_live_${written}`, `live-${written}`, "y".repeat(1000), "2026-01-01T00:00:00.000Z");
          written++;
        },
      },
    );
    relay.close();
    assert.ok(
      lines.some((line) => line.includes("changed meanwhile")),
      lines.join("\n"),
    );
    const copied = slugs(join(dir, "copy.db"));
    const live = copied.filter((slug) => slug.startsWith("live-"));
    assert.ok(live.length >= 1 && live.length <= written, `${live.length} of ${written} later rows`);
    assert.deepEqual(live, live.map((_, n) => `live-${n}`).sort(), "a prefix of the later writes: one moment's state");
    assert.equal(copied.length, 3000 + live.length);
    assert.equal(result.summary.workspaces.length, copied.length);
  });

  test("an existing file is kept unless --force, which replaces it with a private one", async () => {
    const database = join(dir, "relay.db");
    await relayDatabase(database, 3);
    const to = join(dir, "copy.db");
    writeFileSync(to, "an older backup");
    chmodSync(to, 0o644);
    await assert.rejects(
      backupDatabase({ database, to, force: false }, deps()),
      new BackupError(`--to: ${to} exists; pass --force to replace it`),
    );
    assert.equal(readFileSync(to, "utf8"), "an older backup");
    await backupDatabase({ database, to, force: true }, deps());
    assert.equal(slugs(to).length, 3);
    assert.equal(mode(to), "600");
  });

  test("refusals name the flag: no database, a missing folder, a folder as the file, the live database itself, not tab-relay's", async () => {
    const database = join(dir, "relay.db");
    const refused = async (options: { database?: string; to: string; force?: boolean }) => {
      const error = await backupDatabase({ database, force: false, ...options }, deps()).then(
        () => assert.fail("accepted"),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof BackupError, String(error));
      return error.message;
    };
    assert.match(
      await refused({ to: join(dir, "copy.db") }),
      /^--data: no database at .*relay\.db: is this the data folder/,
    );
    await relayDatabase(database, 1);
    assert.match(await refused({ to: join(dir, "nowhere", "copy.db") }), /^--to: the folder .*nowhere does not exist$/);
    assert.match(await refused({ to: dir }), /^--to: .* is a folder; name the file to write/);
    assert.match(
      await refused({ to: database, force: true }),
      /^--to: .*relay\.db is the live database or one of its files; write the backup to a file of its own$/,
    );
    for (const [target, owner] of [
      [LOCK_FILE, /is the lock file \(relay\.pid\) of the relay serving /],
      ["relay.db-wal", /is the live database or one of its files/],
      [join("models", "x.gguf"), /is inside the relay's own models folder/],
      [join("engine", "package.json"), /is inside the relay's own engine folder/],
    ] as const) {
      // Whether or not the file is there yet, and with --force: a backup never replaces what the relay runs on.
      mkdirSync(dirname(join(dir, target)), { recursive: true });
      assert.match(await refused({ to: join(dir, target), force: true }), owner, target);
      writeFileSync(join(dir, target), "the relay's\n");
      assert.match(await refused({ to: join(dir, target), force: true }), owner, target);
      assert.equal(readFileSync(join(dir, target), "utf8"), "the relay's\n", `${target} was replaced`);
    }
    symlinkSync(dir, join(dir, "..", `${basename(dir)}-link`));
    assert.match(
      await refused({ to: join(dir, "..", `${basename(dir)}-link`, LOCK_FILE), force: true }),
      /is the lock file/,
      "through a symbolic link to the data folder",
    );
    rmSync(join(dir, "..", `${basename(dir)}-link`));
    const other = join(dir, "other.db");
    new SqliteDatabase(other).exec("create table notes (text)").close();
    assert.match(
      await refused({ database: other, to: join(dir, "copy.db") }),
      /^--data: .*other\.db is a SQLite database, but not tab-relay's/,
    );
    assert.equal(existsSync(join(dir, "copy.db")), false);
  });
});

describe("tab-relay restore", () => {
  let dir: string;
  let backup: string;
  let lines: string[];
  const deps = (alive: (pid: number) => boolean = () => false) => ({
    progress: (line: string) => lines.push(line),
    now: () => 0,
    alive,
  });
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "tab-relay-restore-"));
    lines = [];
    const source = join(dir, "source", "relay.db");
    mkdirSync(join(dir, "source"));
    await relayDatabase(source, 5);
    backup = join(dir, "backup.db");
    await backupDatabase({ database: source, to: backup, force: false }, { progress: () => undefined, now: () => 0 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("into a new folder: the folders it creates are 0700, the database 0600, and the relay's store opens it", async () => {
    const data = join(dir, "new", "data");
    const result = await restoreDatabase(
      { from: backup, dataDir: data, databaseFile: "relay.db", force: false },
      deps(),
    );
    assert.equal(result.path, join(data, "relay.db"));
    assert.deepEqual([mode(join(dir, "new")), mode(data), mode(join(data, "relay.db"))], ["700", "700", "600"]);
    assert.deepEqual(readdirSync(data), ["relay.db"], "no lock or partial file is left");
    assert.equal(result.summary.workspaces.length, 5);
    const store = await openSqliteStore(join(data, "relay.db"));
    try {
      assert.equal(await store.workspaces.count(), 5);
    } finally {
      await store.close();
    }
  });

  test("over a folder a relay is serving: refused, and the folder is left as it was", async () => {
    const data = join(dir, "served");
    mkdirSync(data);
    writeFileSync(join(data, LOCK_FILE), "4242\n");
    await assert.rejects(
      restoreDatabase(
        { from: backup, dataDir: data, databaseFile: "relay.db", force: true },
        deps((pid) => pid === 4242),
      ),
      new BackupError(`--data: a relay (process 4242) is serving ${data}; stop it before restoring into this folder`),
    );
    assert.deepEqual(readdirSync(data), [LOCK_FILE]);
    assert.equal(readFileSync(join(data, LOCK_FILE), "utf8"), "4242\n");
  });

  test("a relay.pid left by a relay that no longer runs does not stop it", async () => {
    const data = join(dir, "crashed");
    mkdirSync(data, { mode: 0o700 });
    writeFileSync(join(data, LOCK_FILE), "4242\n");
    await restoreDatabase({ from: backup, dataDir: data, databaseFile: "relay.db", force: false }, deps());
    assert.deepEqual(readdirSync(data), ["relay.db"]);
  });

  test("over an existing database only with --force, and the replaced database's -wal and -shm go, so SQLite never plays them into the restored one", async () => {
    const data = join(dir, "data");
    mkdirSync(data, { mode: 0o700 });
    const target = join(data, "relay.db");
    await relayDatabase(target, 0);
    // The old database as a relay killed mid-write leaves it: committed pages still in its write-ahead log.
    const old = new SqliteDatabase(target);
    old.pragma("journal_mode = WAL");
    old.pragma("wal_autocheckpoint = 0");
    old
      .prepare(
        "insert into workspaces (id, slug, name, created_at) values ('wsp_old', 'old', 'Old', '2026-01-01T00:00:00.000Z')",
      )
      .run();
    old.prepare("update workspaces set name = 'changed'").run();
    copyFileSync(`${target}-wal`, join(dir, "stale-wal"));
    copyFileSync(`${target}-shm`, join(dir, "stale-shm"));
    old.close();
    copyFileSync(join(dir, "stale-wal"), `${target}-wal`);
    copyFileSync(join(dir, "stale-shm"), `${target}-shm`);

    await assert.rejects(
      restoreDatabase({ from: backup, dataDir: data, databaseFile: "relay.db", force: false }, deps()),
      new BackupError(`--data: ${data} already holds a database (relay.db); pass --force to replace it`),
    );
    assert.equal(existsSync(`${target}-wal`), true, "a refusal removes nothing");
    const result = await restoreDatabase(
      { from: backup, dataDir: data, databaseFile: "relay.db", force: true },
      deps(),
    );
    assert.deepEqual(result.removed, [`${target}-wal`, `${target}-shm`]);
    assert.deepEqual(readdirSync(data), ["relay.db"]);
    const restored = new SqliteDatabase(target);
    try {
      assert.equal(restored.pragma("integrity_check", { simple: true }), "ok");
      const rows = restored.prepare("select slug, name from workspaces order by slug").all() as {
        slug: string;
        name: string;
      }[];
      assert.equal(rows.length, 5);
      assert.ok(
        rows.every((row) => row.slug.startsWith("ws-") && row.name === "x".repeat(1000)),
        "the backup's rows, untouched by the old log",
      );
    } finally {
      restored.close();
    }
  });

  test("a file that is not a tab-relay database, is damaged, or was made by a newer relay is refused before anything is written", async () => {
    const data = join(dir, "data");
    const refused = async (from: string) => {
      const error = await restoreDatabase({ from, dataDir: data, databaseFile: "relay.db", force: false }, deps()).then(
        () => assert.fail("accepted"),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof BackupError, String(error));
      assert.equal(existsSync(data), false, "nothing is created");
      return error.message;
    };
    assert.match(await refused(join(dir, "missing.db")), /^--from: no file at .*missing\.db$/);
    writeFileSync(
      join(dir, "notes.txt"),
      "not a database at all, but long enough to have a header of sorts. ".repeat(20),
    );
    assert.match(
      await refused(join(dir, "notes.txt")),
      /^--from: .*notes\.txt is not a SQLite database \(file is not a database\)$/,
    );

    const other = join(dir, "other.db");
    new SqliteDatabase(other).exec("create table notes (text)").close();
    assert.match(await refused(other), /^--from: .*other\.db is a SQLite database, but not tab-relay's/);

    const newer = join(dir, "newer.db");
    copyFileSync(backup, newer);
    new SqliteDatabase(newer)
      .prepare(
        "insert into kysely_migration (name, timestamp) values ('0099_from_the_future', '2030-01-01T00:00:00.000Z')",
      )
      .run();
    assert.match(
      await refused(newer),
      /^--from: .*newer\.db was made by a newer tab-relay \(its migration 0099_from_the_future is unknown to this one\)/,
    );

    // One page of the workspaces table overwritten: the file still opens, but its b-tree is broken.
    const damaged = join(dir, "damaged.db");
    copyFileSync(backup, damaged);
    const probe = new SqliteDatabase(damaged, { readonly: true });
    const page = (
      probe.prepare("select rootpage from sqlite_master where name = 'workspaces'").get() as { rootpage: number }
    ).rootpage;
    const pageSize = probe.pragma("page_size", { simple: true }) as number;
    probe.close();
    const bytes = readFileSync(damaged);
    bytes.fill(0xa5, (page - 1) * pageSize, page * pageSize);
    writeFileSync(damaged, bytes);
    assert.match(
      await refused(damaged),
      /^--from: .*damaged\.db (is damaged \(integrity_check: [^\n]+\)|is not a SQLite database \([^\n]+\))$/,
    );
  });
});

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { LOCK_FILE, lockDataFolder, looseModeWarnings, processAlive, stateFromStat } from "./dataFolder";

describe("one serving relay per data folder", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tab-relay-lock-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("the first relay takes the folder and gives it back when it stops", () => {
    const release = lockDataFolder(dir, 1001, () => true);
    assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), "1001");
    release();
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  });

  test("a second relay is refused while the first runs, with the way to run several", () => {
    lockDataFolder(dir, 1001, () => true);
    assert.throws(
      () => lockDataFolder(dir, 2002, (pid) => pid === 1001),
      /Another tab-relay \(process 1001\) is serving .*PostgreSQL/,
    );
    assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), "1001");
  });

  test("a folder left by a relay that no longer runs is taken over", () => {
    writeFileSync(join(dir, LOCK_FILE), "1001\n");
    const release = lockDataFolder(dir, 2002, () => false);
    assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), "2002");
    release();
  });

  test("releasing leaves alone a folder another relay has taken since", () => {
    const release = lockDataFolder(dir, 1001, () => false);
    writeFileSync(join(dir, LOCK_FILE), "2002\n");
    release();
    assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), "2002");
  });

  test("this process is alive; a process id nobody holds is not", () => {
    assert.equal(processAlive(process.pid), true);
    assert.equal(processAlive(2 ** 22 + 12_345), false);
  });

  test("a process whose stat says zombie counts as gone; without a stat to read, the signal decides", () => {
    assert.equal(
      processAlive(process.pid, (pid) => `${pid} (node) Z 1 ${pid} ${pid} 0 -1`),
      false,
    );
    assert.equal(
      processAlive(process.pid, (pid) => `${pid} (node) X 1 ${pid} ${pid} 0 -1`),
      false,
    );
    assert.equal(
      processAlive(process.pid, (pid) => `${pid} (node) S 1 ${pid} ${pid} 0 -1`),
      true,
    );
    assert.equal(
      processAlive(process.pid, () => undefined),
      true,
    );
  });
});

describe("the state of a /proc/PID/stat line", () => {
  test("is the letter after the command name", () => {
    assert.equal(stateFromStat("1 (systemd) S 0 1 1 0 -1 4194560 52347"), "S");
    assert.equal(stateFromStat("4242 (sleep) Z 4241 4241 1 0 -1 4227148 97"), "Z");
  });

  test("is read after the last parenthesis, whatever the command name holds", () => {
    // A process may call itself anything, `) Z (` included: only the last `)` ends the name.
    assert.equal(stateFromStat("4242 (evil) Z (name) S 1 4242 4242 0 -1"), "S");
    assert.equal(stateFromStat("4242 (a b (c)) R 1 4242 4242 0 -1"), "R");
  });

  test("is unknown in a line that is not a stat line", () => {
    assert.equal(stateFromStat(""), undefined);
    assert.equal(stateFromStat("4242 sleep Z"), undefined);
    assert.equal(stateFromStat("4242 (sleep)"), undefined);
  });
});

describe(
  "a relay whose parent never reaped it",
  { skip: process.platform !== "linux" && "zombies are read from Linux's /proc" },
  () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), "tab-relay-zombie-"));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    /**
     * A real zombie: the shell starts `sleep 0.3` in the background, prints its id and becomes `sleep 30`, which never
     * waits for children, so the finished `sleep 0.3` stays a zombie until its parent dies. The child outlives the
     * `exec`: dash reaps a background job that has already ended when it runs its next command, and a `sleep 0`
     * sometimes ended that early, leaving no zombie at all (seen in CI as ENOENT on /proc/<pid>/stat).
     */
    async function withZombie(run: (zombie: number, parent: number) => void | Promise<void>): Promise<void> {
      const parent = spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 30"], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      try {
        const [line] = (await once(parent.stdout, "data")) as [Buffer];
        const zombie = Number.parseInt(line.toString(), 10);
        assert.ok(Number.isInteger(zombie) && zombie > 0, `no process id in ${JSON.stringify(line.toString())}`);
        for (let tries = 0; stateFromStat(readFileSync(`/proc/${zombie}/stat`, "utf8")) !== "Z"; tries++) {
          assert.ok(tries < 200, "the child did not become a zombie within 2 s");
          await sleep(10);
        }
        await run(zombie, parent.pid as number);
      } finally {
        parent.kill("SIGKILL");
        await once(parent, "exit");
      }
    }

    test("the zombie answers signal 0 yet counts as gone, and its folder is taken over", async () => {
      await withZombie((zombie) => {
        assert.doesNotThrow(() => process.kill(zombie, 0), "the kernel still knows the zombie's id");
        assert.equal(processAlive(zombie), false);
        writeFileSync(join(dir, LOCK_FILE), `${zombie}\n`);
        const release = lockDataFolder(dir, process.pid);
        assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), String(process.pid));
        release();
      });
    });

    test("a running process still holds its folder", async () => {
      await withZombie((_zombie, parent) => {
        assert.equal(processAlive(parent), true);
        writeFileSync(join(dir, LOCK_FILE), `${parent}\n`);
        assert.throws(
          () => lockDataFolder(dir, process.pid),
          new RegExp(`Another tab-relay \\(process ${parent}\\) is serving`),
        );
        assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), String(parent));
      });
    });
  },
);

describe("the modes of the data folder", { skip: process.platform === "win32" && "Windows has no such modes" }, () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tab relay's modes-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("a private folder and database say nothing", () => {
    writeFileSync(join(dir, "relay.db"), "", { mode: 0o600 });
    assert.equal((statSync(dir).mode & 0o777).toString(8), "700", "mkdtemp makes private folders");
    assert.deepEqual(looseModeWarnings(dir, "relay.db"), []);
  });

  test("each folder or file that others can use gets the chmod that closes it, quoted for the shell, and is left as it is", () => {
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, "relay.db"), "");
    chmodSync(join(dir, "relay.db"), 0o644);
    writeFileSync(join(dir, "relay.db-wal"), "");
    chmodSync(join(dir, "relay.db-wal"), 0o640);
    writeFileSync(join(dir, "relay.db-shm"), "", { mode: 0o600 });
    const quoted = `'${dir.replaceAll("'", "'\\''")}`;
    assert.deepEqual(looseModeWarnings(dir, "relay.db"), [
      `The data folder ${dir} holds the agents' signing secrets but other users have access (mode 755); run: chmod 700 ${quoted}'`,
      `The database file ${join(dir, "relay.db")} holds the agents' signing secrets but other users have access (mode 644); run: chmod 600 ${quoted}/relay.db'`,
      `The database file ${join(dir, "relay.db-wal")} holds the agents' signing secrets but other users have access (mode 640); run: chmod 600 ${quoted}/relay.db-wal'`,
    ]);
    assert.equal((statSync(dir).mode & 0o777).toString(8), "755");
  });
});

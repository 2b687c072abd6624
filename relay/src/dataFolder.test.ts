import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { LOCK_FILE, lockDataFolder, processAlive } from "./dataFolder";

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
    assert.throws(() => lockDataFolder(dir, 2002, (pid) => pid === 1001), /Another tab-relay \(process 1001\) is serving .*PostgreSQL/);
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
});

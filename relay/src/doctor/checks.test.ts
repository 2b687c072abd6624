import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type CheckStatus, type DoctorCheck, exitCodeOf, jsonReport, runChecks, textReport } from "./checks";

function check(name: string, status: CheckStatus): DoctorCheck {
  return {
    name,
    async run(progress) {
      progress(`checking ${name}`);
      return { name, status, summary: `${name} is ${status}`, lines: [`${name}: ${status}`], details: { extra: name } };
    },
  };
}

describe("doctor's checks", () => {
  test("the exit code is the worst status's: warnings pass, a failure is 1, nothing answering is 2", () => {
    assert.equal(exitCodeOf([]), 0);
    assert.equal(exitCodeOf(["ok", "warn"]), 0);
    assert.equal(exitCodeOf(["ok", "failed", "warn"]), 1);
    assert.equal(exitCodeOf(["failed", "unreachable", "ok"]), 2);
  });

  test("checks run in order, their progress first, then one text report or one JSON object", async () => {
    const progress: string[] = [];
    const report = await runChecks([check("upstream", "ok"), check("database", "failed")], (line) =>
      progress.push(line),
    );
    assert.deepEqual(progress, ["checking upstream", "checking database"]);
    assert.deepEqual([report.ok, report.exitCode], [false, 1]);
    assert.equal(textReport(report), "upstream: ok\n\ndatabase: failed\n");
    assert.deepEqual(JSON.parse(jsonReport(report)), {
      ok: false,
      exit_code: 1,
      checks: [
        { name: "upstream", status: "ok", summary: "upstream is ok", extra: "upstream" },
        { name: "database", status: "failed", summary: "database is failed", extra: "database" },
      ],
    });
    assert.equal(jsonReport(report).split("\n").length, 2);
  });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { createStreamLogger } from "./logger";

const NOW = Date.parse("2026-11-27T12:34:56.789Z");

function logTo(isTTY: boolean | undefined): string[] {
  const lines: string[] = [];
  const logger = createStreamLogger({
    level: "info",
    stream: { ...(isTTY === undefined ? {} : { isTTY }), write: (line: string) => lines.push(line) },
    now: () => NOW,
  });
  logger.debug("not shown");
  logger.info("relay listening", { url: "http://127.0.0.1:8787", provider: "local" });
  logger.warn("agent refused", { reason: "two words", error: new Error("boom") });
  return lines;
}

test("at a terminal, log entries are plain lines for people: time, level, message, key=value", () => {
  assert.deepEqual(logTo(true), [
    "12:34:56 info  relay listening url=http://127.0.0.1:8787 provider=local\n",
    '12:34:56 warn  agent refused reason="two words" error={"name":"Error","message":"boom"}\n',
  ]);
});

test("into a pipe or a file, log entries are JSON lines", () => {
  for (const isTTY of [false, undefined]) {
    const lines = logTo(isTTY);
    assert.equal(lines.length, 2);
    assert.deepEqual(JSON.parse(lines[0] ?? ""), {
      time: "2026-11-27T12:34:56.789Z",
      level: "info",
      msg: "relay listening",
      url: "http://127.0.0.1:8787",
      provider: "local",
    });
  }
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { DownloadProgress } from "./download";
import { formatBytes, formatDuration, progressReporter, progressText } from "./progress";

const at = (received: number, more: Partial<DownloadProgress> = {}): DownloadProgress => ({
  received,
  total: 1_646_573_056,
  startedAt: 0,
  bytesPerSecond: 12_300_000,
  secondsLeft: (1_646_573_056 - received) / 12_300_000,
  ...more,
});

describe("pull progress", () => {
  test("sizes, speeds and times read as people read them", () => {
    assert.deepEqual([0, 999, 12_000, 531_068_128, 1_646_573_056, 8_098_525_600].map(formatBytes), [
      "0 B",
      "999 B",
      "12.0 kB",
      "531 MB",
      "1.65 GB",
      "8.10 GB",
    ]);
    assert.deepEqual([4.4, 74, 3599, 3720].map(formatDuration), ["4 s", "1m14s", "59m59s", "1h02m"]);
    assert.equal(progressText(at(741_000_000)), " 45%  741 MB / 1.65 GB  12.3 MB/s  1m14s left");
    assert.equal(
      progressText(at(0, { bytesPerSecond: undefined, secondsLeft: undefined })),
      "  0%  0 B / 1.65 GB  -- MB/s",
    );
    assert.equal(
      progressText(at(741_000_000, { retry: { inMs: 2000, why: "the hub answered 503" } })),
      " 45%  741 MB / 1.65 GB  retrying in 2 s (the hub answered 503)",
    );
  });

  test("a terminal gets one line redrawn in place, at most ten times a second, ended by finish()", () => {
    let out = "";
    let now = 0;
    const report = progressReporter("qwen2.5-coder-1.5b", {
      write: (t) => (out += t),
      tty: true,
      columns: 100,
      now: () => now,
    });
    report({ kind: "progress", progress: at(0) });
    now = 50;
    report({ kind: "progress", progress: at(100_000_000) }); // too soon: skipped
    now = 150;
    report({ kind: "progress", progress: at(741_000_000) });
    report({ kind: "progress", progress: at(1_646_573_056) }); // the end is always drawn
    report.finish();
    const ERASE = "\u001b[K";
    const frames = out.split("\r").filter(Boolean);
    assert.equal(frames.length, 3);
    assert.ok(
      frames.every((frame) => frame.replace("\n", "").endsWith(ERASE)),
      "each frame erases what it replaces",
    );
    const text = (frames[1] ?? "").replace(ERASE, "");
    assert.match(text, /^qwen2\.5-coder-1\.5b \[#+\.+\] {2}45% {2}741 MB \/ 1\.65 GB {2}12\.3 MB\/s {2}1m14s left$/);
    assert.ok(
      frames.every((frame) => frame.replace(ERASE, "").replace("\n", "").length < 100),
      "fits the terminal",
    );
    assert.ok(out.endsWith("\n"));
  });

  test("a pipe gets a line per tenth, per retry, and for waiting on another pull, each readable alone", () => {
    const lines: string[] = [];
    const report = progressReporter("m", { write: (t) => lines.push(t), tty: false, now: () => 0 });
    report({ kind: "waiting", pid: 42 });
    for (let received = 0; received <= 1_646_573_056; received += 16_465_730)
      report({ kind: "progress", progress: at(received) });
    report({ kind: "progress", progress: at(1_646_573_056) });
    report({ kind: "progress", progress: at(900_000_000, { retry: { inMs: 1000, why: "cut" } }) });
    report.finish();
    assert.equal(lines[0], "m: another pull (pid 42) is downloading this file; waiting for it\n");
    const percents = lines.slice(1, -1).map((line) => /^m: +(\d+)%/.exec(line)?.[1]);
    assert.deepEqual(percents, ["0", "10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]);
    assert.match(lines.at(-1) ?? "", /retrying in 1 s \(cut\)/);
    assert.ok(lines.every((line) => line.endsWith("\n") && !line.includes("\r")));
  });
});

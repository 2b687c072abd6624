// Protocol facts shared/ holds are written once. A module that reads a Retry-After header hands it to
// parseRetryAfterMs (shared/src/retryAfter.ts) rather than parsing it itself, and Socket Mode's close codes are
// numbers only in SOCKET_MODE_CLOSE_CODES (the console's live updates, another protocol, have LIVE_CLOSE in
// relay/src/live/hub.ts). A copy written anywhere else in the code fails here.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Everything that speaks the protocol: the relay, its console, shared, the agent package, the extension, the example agent. */
const AREAS = ["relay/src", "relay/console/src", "shared/src", "agent/src", "extension/src", "examples"];

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules") continue;
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** `file:line: text` of every line of the code outside `homes` that `matches`. */
function linesWhere(matches: (line: string) => boolean, homes: readonly string[] = []): string[] {
  const found: string[] = [];
  for (const area of AREAS) {
    for (const path of sources(join(ROOT, area))) {
      const file = relative(ROOT, path);
      if (homes.includes(file)) continue;
      readFileSync(path, "utf8")
        .split("\n")
        .forEach((line, index) => {
          if (matches(line)) found.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
  }
  return found;
}

test("every read of a Retry-After header goes through parseRetryAfterMs", () => {
  const READ = /\.get\(\s*["'`]retry-after["'`]\s*\)|\[\s*["'`]retry-after["'`]\s*\]/i;
  const reads = linesWhere((line) => READ.test(line));
  assert.ok(reads.length >= 3, `the extension, the webhook client and the agent helper read it:\n${reads.join("\n")}`);
  const ownParsing = reads.filter((line) => !line.includes("parseRetryAfterMs("));
  assert.deepEqual(ownParsing, [], "read Retry-After with parseRetryAfterMs from @tab-relay/shared");
});

test("Socket Mode's close codes are numbers only in SOCKET_MODE_CLOSE_CODES", () => {
  const CLOSE_CODE = /\bcode\s*[:=]\s*4\d{3}\b|\bclose\(\s*4\d{3}\b|[=!]==?\s*4\d{3}\b|\b4\d{3}\s*[=!]==?/;
  const copies = linesWhere(
    (line) => CLOSE_CODE.test(line),
    ["shared/src/webhooks/socketMode.ts", "relay/src/live/hub.ts"],
  );
  assert.deepEqual(copies, [], "use SOCKET_MODE_CLOSE_CODES from @tab-relay/shared");
});

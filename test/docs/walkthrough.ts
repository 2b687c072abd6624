/**
 * The walkthrough blocks of the docs, read the way test/docs/readmeWalkthrough.test.ts runs them. A fenced `sh`
 * block takes part when the line before it (blank lines aside) is a marker comment, which GitHub does not show:
 *
 *   <!-- walkthrough: relay -->  starts the relay in the background and waits for `serving on`; a relay the
 *                                walkthrough started before is stopped first, with SIGTERM, and must stop cleanly
 *   <!-- walkthrough: agent -->  starts the echo agent in the background and waits for its `listening` line
 *   <!-- walkthrough: shell -->  runs in the walkthrough's one shell (variables carry over), under `set -e`
 *   <!-- walkthrough: skip -->   is not run
 *
 * Every `sh` block in a walked section needs one, so a block added there is either run or skipped on purpose.
 */
import { readFileSync } from "node:fs";

export const STEP_KINDS = ["relay", "agent", "shell", "skip"] as const;
export type StepKind = (typeof STEP_KINDS)[number];

export interface Step {
  kind: StepKind;
  /** The block's text, its fence's indentation removed. */
  code: string;
  /** `file:line` of the opening fence, for messages. */
  where: string;
}

const MARKER = /^\s*<!--\s*walkthrough:\s*(\S+)\s*-->\s*$/;
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;

/**
 * The `sh` blocks under the headings named (each up to the next heading of its level or above), in order.
 * Throws when a block there has no marker, or a marker is not one of STEP_KINDS.
 */
export function walkthroughSteps(file: string, text: string, headings: readonly string[]): Step[] {
  const lines = text.split("\n");
  const steps: Step[] = [];
  let section: { level: number; title: string } | undefined;
  const seen = new Set<string>();
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? "";
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const level = heading[1]?.length ?? 0;
      const title = heading[2] ?? "";
      if (section !== undefined && level <= section.level) section = undefined;
      if (headings.includes(title)) {
        section = { level, title };
        seen.add(title);
      }
      continue;
    }
    const fence = FENCE.exec(line);
    if (!fence) continue;
    const indent = fence[1]?.length ?? 0;
    const marks = fence[2] ?? "```";
    const close = new RegExp(`^\\s*${marks[0] === "`" ? "`" : "~"}{${marks.length},}\\s*$`);
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && !close.test(lines[index] ?? ""); index++)
      body.push((lines[index] ?? "").slice(indent));
    if (section === undefined || fence[3] !== "sh") continue;
    let before = start - 1;
    while (before >= 0 && (lines[before] ?? "").trim() === "") before--;
    const marker = MARKER.exec(lines[before] ?? "");
    const where = `${file}:${start + 1}`;
    if (!marker)
      throw new Error(
        `${where}: an sh block in "${section.title}" without a <!-- walkthrough: ${STEP_KINDS.join("|")} --> line before it`,
      );
    const kind = marker[1] as StepKind;
    if (!STEP_KINDS.includes(kind)) throw new Error(`${where}: unknown walkthrough step "${kind}"`);
    steps.push({ kind, code: body.join("\n"), where });
  }
  const missing = headings.filter((title) => !seen.has(title));
  if (missing.length > 0) throw new Error(`${file}: no heading ${missing.map((title) => `"${title}"`).join(", ")}`);
  return steps;
}

export function readSteps(root: URL, file: string, headings: readonly string[]): Step[] {
  return walkthroughSteps(file, readFileSync(new URL(file, root), "utf8"), headings);
}

export interface Substitutions {
  /** The relay's port for `127.0.0.1:8787`. */
  port: number;
  /** The owner key for the `svc_ws_...` placeholder, once a relay has printed one. */
  key?: string | undefined;
}

/**
 * A block as the test runs it: `npm install` and `npm test` dropped (the test runs inside `npm test`, with the
 * dependencies installed), the relay's default address made the test's free port, and the key placeholder made the
 * key the first start printed.
 */
export function runnable(code: string, substitutions: Substitutions): string {
  let text = code
    .split("\n")
    .map((line) => line.replace(/^(\s*)npm install\s*&&\s*/, "$1"))
    .filter((line) => !/^\s*npm (install|test)\b/.test(line))
    .join("\n")
    .replaceAll("127.0.0.1:8787", `127.0.0.1:${substitutions.port}`);
  if (substitutions.key !== undefined) text = text.replaceAll("svc_ws_...", substitutions.key);
  return text;
}

/** The one command of a block that starts a server, without its trailing comment. */
export function serverCommand(step: Step, substitutions: Substitutions): string {
  const commands = runnable(step.code, substitutions)
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  if (commands.length !== 1)
    throw new Error(`${step.where}: a ${step.kind} block must hold one command, not ${commands.length}`);
  return commands[0] as string;
}

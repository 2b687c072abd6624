/**
 * Summarises a V8 CPU profile (from `npm run bench -- --cpu-prof`): where the relay process spent its
 * time, by self time per function and per file, and inclusive time for the busiest functions.
 * Usage: tsx test/bench/profileSummary.ts test-output/bench/profiles/<file>.cpuprofile [top=25]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const file = process.argv[2];
if (!file) {
  console.error("usage: tsx test/bench/profileSummary.ts <file.cpuprofile> [top]");
  process.exit(2);
}
const top = Number(process.argv[3] ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const totalUs = profile.endTime - profile.startTime;

const shortUrl = (url: string) =>
  url.replace(/^file:\/\/.*?\/(node_modules|relay|shared)\//, "$1/").replace(/^node:/, "node:") || "(native)";
const label = (node: ProfileNode) =>
  `${node.callFrame.functionName || "(anonymous)"}  ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;

const selfByFunction = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  selfByFunction.set(label(node), (selfByFunction.get(label(node)) ?? 0) + us);
  const fileName = shortUrl(node.callFrame.url);
  selfByFile.set(fileName, (selfByFile.get(fileName) ?? 0) + us);
  // Each distinct function on the stack gets the sample once, however deep the recursion.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at);
    if (!frame) break;
    const name = label(frame);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
}

const print = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${((100 * us) / totalUs).toFixed(1).padStart(6)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    );
  }
};
console.log(`${file}: ${(totalUs / 1e6).toFixed(1)} s profiled, ${profile.samples.length} samples`);
print("Self time by file", selfByFile);
print("Self time by function", selfByFunction);
print("Inclusive time by function", inclusive);

import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

/**
 * The core's modules form no circle of imports, type-only imports included: a module that reads only the modules
 * below it can be read, tested and changed on its own (recentFiles and relatedContext once imported each other).
 */
const coreDir = __dirname;

function localImports(file: string): string[] {
  const source = readFileSync(join(coreDir, file), "utf8");
  const found = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"\.\/([\w.]+)"/g)];
  return found.map((match) => `${match[1] as string}.ts`);
}

function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === "done") return undefined;
    if (state.get(node) === "open") return [...path.slice(path.indexOf(node)), node];
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

test("the core's modules import one another without a circle", () => {
  const files = readdirSync(coreDir).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"));
  const graph = new Map(files.map((file) => [file, localImports(file)]));
  assert.ok((graph.get("recentFiles.ts") ?? []).includes("relatedContext.ts"), "the import scan sees imports");
  assert.equal(findCycle(graph)?.join(" -> "), undefined);
});

test("the cycle finder reports a circle of type-only imports", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts"]],
  ]);
  assert.deepEqual(findCycle(graph), ["a.ts", "b.ts", "c.ts", "a.ts"]);
});

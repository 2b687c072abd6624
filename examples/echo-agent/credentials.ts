/**
 * The echo agent's saved credentials: the token and signing secret the relay showed once, kept in a local file
 * (mode 0600) so a second run reuses the agent the first one created. One entry per relay and agent name.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Relative to the directory it runs from: the repository root under `npm run agent:echo`, ignored by git. */
export const DEFAULT_CREDENTIALS_FILE = ".tab-relay/echo-agent.json";

export interface SavedAgent {
  /** The relay's base URL, as `relayKey` spells it. */
  relay: string;
  name: string;
  agent_id: string;
  /** The webhook URL the agent was last pointed at; `null` for one made for Socket Mode. */
  webhook_url: string | null;
  token: string;
  signing_secret: string;
}

/** `http://127.0.0.1:8787`, `http://127.0.0.1:8787/` and `HTTP://127.0.0.1:8787` are one relay. */
export function relayKey(relay: string): string {
  const url = new URL(relay);
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

function sameAgent(entry: SavedAgent, relay: string, name: string): boolean {
  return entry.relay === relayKey(relay) && entry.name.toLowerCase() === name.toLowerCase();
}

export function readSaved(file: string): SavedAgent[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const parsed = JSON.parse(text) as { agents?: unknown };
  if (!Array.isArray(parsed.agents))
    throw new Error(`${file} has no "agents" list; remove it or pass another --credentials file`);
  return parsed.agents as SavedAgent[];
}

export function findSaved(file: string, relay: string, name: string): SavedAgent | undefined {
  return readSaved(file).find((entry) => sameAgent(entry, relay, name));
}

function writeSaved(file: string, agents: SavedAgent[]): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // Written whole under another name and renamed, so an interrupted run never leaves half a file of secrets.
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ agents }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

/** Adds or replaces the entry for this relay and name. */
export function saveAgent(file: string, saved: SavedAgent): void {
  const entry = { ...saved, relay: relayKey(saved.relay) };
  writeSaved(file, [...readSaved(file).filter((other) => !sameAgent(other, entry.relay, entry.name)), entry]);
}

export function forgetAgent(file: string, relay: string, name: string): void {
  const agents = readSaved(file);
  const kept = agents.filter((entry) => !sameAgent(entry, relay, name));
  if (kept.length !== agents.length) writeSaved(file, kept);
}

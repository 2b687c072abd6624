import { API_PREFIX, type Api } from "@tab-relay/shared";
import type { Clock, FetchLike } from "./types";

export const ME_PATH = `${API_PREFIX}/me`;

/** The key's owner and workspace, as `GET /api/v1/me` names them. */
export interface KeyOwner {
  readonly workspace: { readonly slug: string; readonly name: string };
  readonly user: { readonly name: string; readonly role: string };
}

/** What asking the relay who a key belongs to found. */
export type ConnectionCheck =
  | { readonly kind: "connected"; readonly owner: KeyOwner }
  /** The key is valid, but for another workspace than the one configured. */
  | { readonly kind: "wrongWorkspace"; readonly owner: KeyOwner; readonly configured: string }
  | { readonly kind: "unauthorized"; readonly message: string }
  | { readonly kind: "unreachable"; readonly message: string }
  | { readonly kind: "failed"; readonly status: number | undefined; readonly message: string };

export interface ConnectionTarget {
  readonly relayUrl: string;
  readonly apiKey: string;
  readonly workspaceSlug: string;
  readonly timeoutMs: number;
}

/** The most of an answer read: `GET /me` is a few hundred bytes, so anything larger is not a relay. */
const MAX_ANSWER_CHARS = 64 * 1024;

/**
 * Asks the relay who the key belongs to (`GET /api/v1/me`, which any valid key may call and which costs the relay
 * one key lookup). Used by the setup command, to tell a wrong workspace from a bad key, and to probe an unreachable
 * relay on the backoff schedule. Never throws.
 */
export async function checkConnection(
  deps: { fetch: FetchLike; clock: Clock },
  target: ConnectionTarget,
): Promise<ConnectionCheck> {
  const controller = new AbortController();
  const timer = deps.clock.setTimeout(() => controller.abort(), target.timeoutMs);
  try {
    let response: Response;
    try {
      response = await deps.fetch(`${target.relayUrl}${ME_PATH}`, {
        method: "GET",
        headers: { authorization: `Bearer ${target.apiKey}`, accept: "application/json" },
        signal: controller.signal,
      });
    } catch (error) {
      const message = controller.signal.aborted
        ? `no answer within ${target.timeoutMs} ms`
        : error instanceof Error
          ? ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
      return { kind: "unreachable", message };
    }
    const text = (await response.text().catch(() => "")).slice(0, MAX_ANSWER_CHARS);
    if (response.status === 401) return { kind: "unauthorized", message: errorMessage(text) ?? "HTTP 401" };
    if (!response.ok) {
      return { kind: "failed", status: response.status, message: errorMessage(text) ?? `HTTP ${response.status}` };
    }
    const owner = parseOwner(text);
    if (owner === undefined)
      return { kind: "failed", status: response.status, message: "the answer is not a tab-relay GET /me" };
    if (owner.workspace.slug !== target.workspaceSlug)
      return { kind: "wrongWorkspace", owner, configured: target.workspaceSlug };
    return { kind: "connected", owner };
  } finally {
    deps.clock.clearTimeout(timer);
  }
}

function parseOwner(text: string): KeyOwner | undefined {
  try {
    const data = (JSON.parse(text) as { data?: Partial<Api.Me> }).data;
    const workspace = data?.workspace;
    const user = data?.user;
    if (typeof workspace?.slug !== "string" || typeof user?.name !== "string") return undefined;
    return {
      workspace: { slug: workspace.slug, name: typeof workspace.name === "string" ? workspace.name : workspace.slug },
      user: { name: user.name, role: typeof user.role === "string" ? user.role : "member" },
    };
  } catch {
    return undefined;
  }
}

function errorMessage(text: string): string | undefined {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === "string" ? message.slice(0, 500) : undefined;
  } catch {
    return undefined;
  }
}

/** "workspace acme" when its name is its slug, else "workspace Acme Inc (acme)". */
export function describeWorkspace(workspace: KeyOwner["workspace"]): string {
  return workspace.name === workspace.slug
    ? `workspace ${workspace.slug}`
    : `workspace ${workspace.name} (${workspace.slug})`;
}

/** One sentence for the person who ran setup or whose key was refused. */
export function describeConnection(check: ConnectionCheck, relayUrl: string): string {
  switch (check.kind) {
    case "connected":
      return `Connected to ${describeWorkspace(check.owner.workspace)} as ${check.owner.user.name} (${check.owner.user.role}).`;
    case "wrongWorkspace":
      return `This API key belongs to ${describeWorkspace(check.owner.workspace)}, not "${check.configured}".`;
    case "unauthorized":
      return `The relay at ${relayUrl} refused the API key (${check.message}).`;
    case "unreachable":
      return `Cannot reach the relay at ${relayUrl} (${check.message}).`;
    case "failed":
      return `The relay at ${relayUrl} answered ${check.status ?? "oddly"}: ${check.message}.`;
  }
}

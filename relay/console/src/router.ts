/** History-API routes: every console page has a real URL, so links from webhook payloads open the right view. */
import type { ConversationType } from "@tab-relay/shared/api";

export type Route =
  | { name: "home" }
  | { name: "conversation"; type: ConversationType; id: string; messageId: string | null }
  | { name: "agents" }
  | { name: "agent"; id: string }
  | { name: "keys" }
  | { name: "playground" }
  | { name: "people" }
  | { name: "audit" }
  | { name: "insights" }
  | { name: "signin"; next: string }
  | { name: "notfound" };

export function parseRoute(pathname: string, search: string): Route {
  const parts = pathname.split("/").filter(Boolean).map(safeDecode);
  const [first, second, third, fourth, fifth] = parts;
  if (parts.length === 0) return { name: "home" };
  if (first === "conversations" && (second === "channel" || second === "dm") && third) {
    if (parts.length === 3) return { name: "conversation", type: second, id: third, messageId: null };
    if (parts.length === 5 && fourth === "messages" && fifth)
      return { name: "conversation", type: second, id: third, messageId: fifth };
  }
  if (first === "agents" && parts.length === 1) return { name: "agents" };
  if (first === "agents" && second && parts.length === 2) return { name: "agent", id: second };
  if (first === "keys" && parts.length === 1) return { name: "keys" };
  if (first === "playground" && parts.length === 1) return { name: "playground" };
  if (first === "people" && parts.length === 1) return { name: "people" };
  if (first === "audit" && parts.length === 1) return { name: "audit" };
  if (first === "insights" && parts.length === 1) return { name: "insights" };
  if (first === "signin" && parts.length === 1)
    return { name: "signin", next: safeNext(new URLSearchParams(search).get("next")) };
  return { name: "notfound" };
}

/** Only a same-origin path may follow sign-in, so a crafted link cannot send someone elsewhere. */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\") || next.startsWith("/signin"))
    return "/";
  return next;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

let listener: ((route: Route) => void) | null = null;

export function currentRoute(): Route {
  return parseRoute(location.pathname, location.search);
}

export function currentPath(): string {
  return location.pathname + location.search;
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", path);
  else if (path !== currentPath()) history.pushState(null, "", path);
  listener?.(currentRoute());
}

export function startRouter(onRoute: (route: Route) => void): void {
  listener = onRoute;
  addEventListener("popstate", () => onRoute(currentRoute()));
  document.addEventListener("click", (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    const link = (event.target as Element | null)?.closest?.("a");
    if (!link || link.target || link.hasAttribute("download") || link.origin !== location.origin) return;
    if (link.pathname.startsWith("/api/") || (link.hash && link.pathname === location.pathname)) return;
    event.preventDefault();
    navigate(link.pathname + link.search);
  });
}

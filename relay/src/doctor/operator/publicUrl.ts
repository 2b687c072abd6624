import { type OperatorConfig, isLoopbackHost } from "../../config";
import type { DoctorCheck } from "../checks";
import type { Finding } from "./result";
import { operatorResult } from "./result";

/** `[::1]` in a URL is `::1` to the address checks. */
function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
}

function trustsProxy(config: Pick<OperatorConfig, "trustProxy">): boolean {
  return config.trustProxy !== false;
}

/**
 * The public URL against the listening address: what people and agents reach (links in events, the console's
 * cookie) and whether keys and cookies can cross the network in plain http on the way.
 */
export function publicUrlCheck(
  config: Pick<OperatorConfig, "host" | "port" | "publicUrl" | "trustProxy">,
): DoctorCheck {
  const name = "public url";
  const label = "Public URL";
  return {
    name,
    async run() {
      return operatorResult(name, label, judge(config));
    },
  };
}

function judge(config: Pick<OperatorConfig, "host" | "port" | "publicUrl" | "trustProxy">): Finding {
  const listen = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`;
  const local = isLoopbackHost(config.host);
  const details = { public_url: config.publicUrl ?? null, listen, listen_loopback: local };
  const proxyTodo = `set TAB_RELAY_TRUST_PROXY to the proxy's address (or 1 for one proxy in front): until then the relay sees every client as the proxy, so one client's bad sign-ins lock everyone out and the logs name the proxy`;
  const exposedTodo = `listen on 127.0.0.1 (--host 127.0.0.1) when the proxy runs on this machine; otherwise let only the proxy reach port ${config.port} (a firewall rule)`;
  if (config.publicUrl === undefined) {
    if (local) {
      return {
        status: "ok",
        summary: `unset: links in events use ${listen}, which only this machine reaches`,
        notes: ["set TAB_RELAY_PUBLIC_URL once people or agents on other machines use the relay"],
        details,
      };
    }
    return {
      status: "warn",
      summary: `unset while the relay listens on ${config.host}, which other machines reach, in plain http`,
      notes: [
        `links in webhook events use ${listen}, and API keys, agent tokens and session cookies cross the network unencrypted`,
      ],
      todo: [
        "put a TLS-terminating proxy in front and set TAB_RELAY_PUBLIC_URL to its https:// address (docs/operating.md, Behind a proxy)",
      ],
      details,
    };
  }
  const secure = config.publicUrl.startsWith("https://");
  const publicLocal = isLoopbackHost(hostOf(config.publicUrl));
  if (!secure && !publicLocal) {
    return {
      status: "warn",
      summary: `${config.publicUrl} is plain http: people and agents send keys and session cookies to it unencrypted, and the console's cookie is not Secure`,
      todo: ["put a TLS-terminating proxy in front and set TAB_RELAY_PUBLIC_URL to its https:// address"],
      details,
    };
  }
  if (!secure) return { status: "ok", summary: `${config.publicUrl}, on this machine only`, details };
  const todo: string[] = [];
  const notes: string[] = [];
  if (!local) {
    notes.push(
      `the relay itself answers plain http on ${listen}, which other machines reach: keys sent there directly bypass the proxy's TLS`,
    );
    todo.push(exposedTodo);
  }
  if (!trustsProxy(config)) todo.push(proxyTodo);
  return {
    status: todo.length > 0 ? "warn" : "ok",
    summary: `${config.publicUrl}, through a proxy to ${listen}${trustsProxy(config) ? "" : " (no proxy trusted)"}`,
    notes,
    todo,
    details,
  };
}

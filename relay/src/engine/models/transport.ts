import type { Agent, Dispatcher, ProxyAgent } from "undici";
import { lazyRequire } from "../../lazyRequire";

/**
 * The download's view of HTTP: one GET, no redirects followed (the caller follows them, bounded, and checks each
 * hop), the body as a stream it can stop. Tests hand in the real client against a local hub; nothing here knows
 * about models.
 */
export interface HttpResponse {
  status: number;
  /** Lower-case names; a repeated header keeps its first value. */
  headers: Readonly<Record<string, string | undefined>>;
  body: AsyncIterable<Uint8Array>;
  /** Drops the connection (an unread body is not drained). */
  cancel(): void;
}

export type HttpGet = (
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
) => Promise<HttpResponse>;

/**
 * Proxies as curl and most tools read them (and undici's EnvHttpProxyAgent, lib/dispatcher/env-http-proxy-agent.js
 * in undici 6.29): `https_proxy`/`HTTPS_PROXY` for https URLs, falling back to the http one; `http_proxy`/`HTTP_PROXY`
 * for http URLs; `no_proxy`/`NO_PROXY` a list of hosts (`host`, `host:port`, `.suffix` or `*.suffix`, `*` for all)
 * reached directly. Read once, in config.ts.
 */
export interface ProxySettings {
  httpProxy: string | undefined;
  httpsProxy: string | undefined;
  noProxy: string | undefined;
}

export const NO_PROXY_SETTINGS: ProxySettings = Object.freeze({
  httpProxy: undefined,
  httpsProxy: undefined,
  noProxy: undefined,
});

const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/** The proxy URL to reach `target` through, or undefined to go direct; undici's rules (see {@link ProxySettings}). */
export function proxyFor(target: URL, settings: ProxySettings): string | undefined {
  const proxy = target.protocol === "https:" ? (settings.httpsProxy ?? settings.httpProxy) : settings.httpProxy;
  if (!proxy) return undefined;
  const entries = (settings.noProxy ?? "").split(/[,\s]/).filter((entry) => entry !== "");
  if (entries.includes("*")) return undefined;
  // The brackets of an IPv6 host stay, as undici keeps them.
  const host = target.host.replace(/:\d*$/, "").toLowerCase();
  const port = Number.parseInt(target.port, 10) || DEFAULT_PORTS[target.protocol] || 0;
  for (const entry of entries) {
    const match = /^(.+):(\d+)$/.exec(entry);
    const name = (match?.[1] ?? entry).toLowerCase();
    const entryPort = match?.[2] ? Number.parseInt(match[2], 10) : 0;
    if (entryPort !== 0 && entryPort !== port) continue;
    if (/^[.*]/.test(name) ? host.endsWith(name.replace(/^\*/, "")) : host === name) return undefined;
  }
  return proxy;
}

interface UndiciModule {
  Agent: typeof Agent;
  ProxyAgent: typeof ProxyAgent;
}
const loadUndici = lazyRequire<UndiciModule>("undici");

export interface HttpClientOptions {
  proxy: ProxySettings;
  /** Extra CA certificates (PEM) to trust, beside the system's (NODE_EXTRA_CA_CERTS works too). */
  ca?: string | undefined;
  /** Connecting, TLS included, and then the response headers, each must come within this. */
  connectTimeoutMs: number;
  headersTimeoutMs: number;
}

/**
 * The real {@link HttpGet}: undici, the relay's HTTP client, through a proxy when the settings name one for the URL.
 * Agents are made per proxy and reused; `close()` ends them all so no keep-alive socket holds the process open.
 * Silence inside a body is the download's stall watchdog's business, so undici's body timeout is off.
 */
export function createHttpGet(options: HttpClientOptions): HttpGet & { close(): Promise<void> } {
  const dispatchers = new Map<string, Dispatcher>();
  const tls = options.ca === undefined ? {} : { ca: options.ca };
  const dispatcherFor = (target: URL): Dispatcher => {
    const proxy = proxyFor(target, options.proxy);
    const key = proxy ?? "";
    let dispatcher = dispatchers.get(key);
    if (dispatcher === undefined) {
      const undici = loadUndici();
      dispatcher =
        proxy === undefined
          ? new undici.Agent({ connect: { ...tls, timeout: options.connectTimeoutMs } })
          : new undici.ProxyAgent({
              uri: proxy,
              requestTls: { ...tls, timeout: options.connectTimeoutMs },
              proxyTls: { ...tls, timeout: options.connectTimeoutMs },
            });
      dispatchers.set(key, dispatcher);
    }
    return dispatcher;
  };
  const get: HttpGet = async (url, init) => {
    const target = new URL(url);
    const response = await dispatcherFor(target).request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: "GET",
      headers: init.headers,
      signal: init.signal,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: 0,
    });
    // Cancelling destroys the body, which then emits an abort error that nobody reads any more.
    response.body.on("error", () => undefined);
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value[0] : value;
    }
    return {
      status: response.statusCode,
      headers,
      body: response.body,
      cancel: () => response.body.destroy(),
    };
  };
  return Object.assign(get, {
    async close() {
      await Promise.all([...dispatchers.values()].map((dispatcher) => dispatcher.destroy()));
      dispatchers.clear();
    },
  });
}

/** How long to wait for a connection (TLS included) and then for the answer's headers, for every pull. */
export const CONNECT_TIMEOUT_MS = 15_000;
export const HEADERS_TIMEOUT_MS = 30_000;

/** The HTTP client pulls use: {@link createHttpGet} with the proxies from config and the standard timeouts. */
export function createModelsHttpGet(proxy: ProxySettings): HttpGet & { close(): Promise<void> } {
  return createHttpGet({ proxy, connectTimeoutMs: CONNECT_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS });
}

/** A socket error's code (ECONNREFUSED, ENOTFOUND, UND_ERR_CONNECT_TIMEOUT), looked for down the cause chain. */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = current.cause;
  }
  return undefined;
}

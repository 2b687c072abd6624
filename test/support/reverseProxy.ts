// Runs the shipped reverse-proxy recipes (docs/deploy/nginx.conf, docs/deploy/Caddyfile) with Debian's own nginx
// and Caddy in front of a relay, on free ports, with a self-signed certificate made on the fly. Used by
// test/relay/nginx.test.ts, test/relay/caddy.test.ts and test/bench/proxyFirstToken.ts.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { LookupAddress, LookupOptions } from "node:dns";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const SETUP_SCRIPT = join(REPO_ROOT, "test/support/setup-proxies.sh");
export const NGINX_RECIPE = join(REPO_ROOT, "docs/deploy/nginx.conf");
export const CADDY_RECIPE = join(REPO_ROOT, "docs/deploy/Caddyfile");

const NGINX = "/usr/sbin/nginx";
const CADDY = "/usr/bin/caddy";
const OPENSSL = "/usr/bin/openssl";

/** The host name of the recipes, kept as it is: clients resolve it to 127.0.0.1 themselves (see `resolveToLoopback`). */
export const SITE = "relay.example.com";

export type ProxyKind = "nginx" | "caddy";
export type Prerequisites = { ready: true } | { ready: false; reason: string };

function present(kind: ProxyKind): boolean {
  return existsSync(OPENSSL) && existsSync(kind === "nginx" ? NGINX : CADDY);
}

/**
 * Installs nginx, Caddy and openssl with apt-get (test/support/setup-proxies.sh) when one is missing, as the
 * browser tests install Chromium. Not ready when that is impossible here (not Debian, not root, offline).
 */
export function ensureProxy(kind: ProxyKind): Prerequisites {
  if (present(kind)) return { ready: true };
  console.log(`[${kind}] ${kind} or openssl missing: running ${SETUP_SCRIPT}`);
  const result = spawnSync("bash", [SETUP_SCRIPT], { stdio: ["ignore", "inherit", "inherit"], timeout: 10 * 60_000 });
  if (result.status === 0 && present(kind)) return { ready: true };
  if (result.status === 0)
    return {
      ready: false,
      reason: `${SETUP_SCRIPT} ran, but ${kind === "nginx" ? NGINX : CADDY} or ${OPENSSL} is still missing`,
    };
  const how = result.error ? result.error.message : `exit code ${String(result.status ?? result.signal)}`;
  return { ready: false, reason: `${SETUP_SCRIPT} failed (${how}); see its output above` };
}

/** A port free on every address right now (IPv4 and IPv6: the recipes listen on both). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: 0, host: "::", ipv6Only: false }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Certificate {
  certPath: string;
  keyPath: string;
  /** The certificate in PEM, for clients to trust as their only CA. */
  pem: string;
}

/** A self-signed P-256 certificate for `site` (`SITE` by default), valid for a day, made by Debian's openssl in `dir`. */
export function makeCertificate(dir: string, site = SITE): Certificate {
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  const made = spawnSync(
    OPENSSL,
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${site}`,
      "-addext",
      `subjectAltName=DNS:${site}`,
      "-keyout",
      keyPath,
      "-out",
      certPath,
    ],
    { encoding: "utf8", timeout: 30_000 },
  );
  if (made.status !== 0) throw new Error(`openssl req failed (${String(made.status ?? made.error)}):\n${made.stderr}`);
  return { certPath, keyPath, pem: readFileSync(certPath, "utf8") };
}

/**
 * Replaces each `from` of a recipe with `to`, checking it occurs exactly `count` times, so that a recipe edited
 * out from under the test fails loudly instead of being run half-rendered.
 */
export function substitute(
  text: string,
  name: string,
  replacements: readonly { from: string; to: string; count: number }[],
): string {
  let out = text;
  for (const { from, to, count } of replacements) {
    const found = out.split(from).length - 1;
    if (found !== count)
      throw new Error(
        `${name}: expected ${count} × ${JSON.stringify(from)}, found ${found}; update test/support/reverseProxy.ts with the recipe`,
      );
    out = out.split(from).join(to);
  }
  return out;
}

export interface ProxyPorts {
  /** Where the recipe's plain-http port (80) listens instead. */
  http: number;
  /** Where the recipe's https port (443) listens instead. */
  https: number;
}

export interface RenderValues {
  ports: ProxyPorts;
  relayPort: number;
  certificate: Pick<Certificate, "certPath" | "keyPath">;
}

/** docs/deploy/nginx.conf with only its ports, certificate paths and the relay's port changed. */
export function renderNginx(values: RenderValues): string {
  return substitute(readFileSync(NGINX_RECIPE, "utf8"), NGINX_RECIPE, [
    { from: "listen 80;", to: `listen ${values.ports.http};`, count: 1 },
    { from: "listen [::]:80;", to: `listen [::]:${values.ports.http};`, count: 1 },
    { from: "listen 443 ssl", to: `listen ${values.ports.https} ssl`, count: 1 },
    { from: "listen [::]:443 ssl", to: `listen [::]:${values.ports.https} ssl`, count: 1 },
    { from: "/etc/letsencrypt/live/relay.example.com/fullchain.pem", to: values.certificate.certPath, count: 1 },
    { from: "/etc/letsencrypt/live/relay.example.com/privkey.pem", to: values.certificate.keyPath, count: 1 },
    { from: "server 127.0.0.1:8787;", to: `server 127.0.0.1:${values.relayPort};`, count: 1 },
  ]);
}

/** docs/deploy/Caddyfile with only the relay's port changed and its own-certificate line switched on. */
export function renderCaddy(values: RenderValues): string {
  return substitute(readFileSync(CADDY_RECIPE, "utf8"), CADDY_RECIPE, [
    {
      from: "# tls /etc/ssl/certs/relay.example.com.pem /etc/ssl/private/relay.example.com.key",
      to: `tls ${values.certificate.certPath} ${values.certificate.keyPath}`,
      count: 1,
    },
    { from: "reverse_proxy 127.0.0.1:8787 {", to: `reverse_proxy 127.0.0.1:${values.relayPort} {`, count: 1 },
  ]);
}

/**
 * What Debian's /etc/nginx/nginx.conf puts around conf.d/*.conf, for a server the test owns: its own pid file, logs
 * and temporary folders under `dir`, one worker, in the foreground. The http {} settings are Debian's (gzip on
 * included), so the recipe runs among the defaults it meets in production.
 */
function nginxMain(dir: string, site: string): string {
  return `daemon off;
worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} info;
events { worker_connections 768; }
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    ssl_prefer_server_ciphers on;
    access_log ${join(dir, "access.log")};
    gzip on;
    client_body_temp_path ${join(dir, "client_body")};
    proxy_temp_path ${join(dir, "proxy")};
    fastcgi_temp_path ${join(dir, "fastcgi")};
    uwsgi_temp_path ${join(dir, "uwsgi")};
    scgi_temp_path ${join(dir, "scgi")};
    include ${site};
}
`;
}

/**
 * Caddy's global options for a server the test owns: no admin endpoint (it would take localhost:2019, which a
 * second Caddy, or the system's, also wants), the recipe's ports moved, state under `dir`. Then the recipe.
 */
function caddyMain(dir: string, ports: ProxyPorts, site: string): string {
  return `{
	admin off
	http_port ${ports.http}
	https_port ${ports.https}
	storage file_system ${join(dir, "caddy-data")}
	skip_install_trust
}

import ${site}
`;
}

export interface ProxyProcess {
  kind: ProxyKind;
  ports: ProxyPorts;
  /** The rendered recipe that runs. */
  recipe: string;
  /** What the proxy wrote (its error log for nginx, its stderr for Caddy). */
  output(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test process that dies with a proxy still running takes it along; the proxy leads its own process group.
process.once("exit", () => {
  for (const child of running) if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
});

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Resolves once a TLS handshake with SNI `SITE` succeeds on the port, or rejects when the child exits first. */
async function waitForTls(child: ChildProcess, port: number, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let exited = false;
  child.once("exit", () => (exited = true));
  for (;;) {
    if (exited) throw new Error(`the proxy exited before it listened:\n${output()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = tlsConnect({ host: "127.0.0.1", port, servername: SITE, rejectUnauthorized: false }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (performance.now() > deadline)
      throw new Error(`the proxy did not listen on ${port} within ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Starts nginx or Caddy in the foreground with the recipe rendered for `values`, in a folder of its own under the
 * system's temporary folder, and resolves once it answers TLS. `stop` ends it (and its workers) and removes the folder.
 */
export async function startProxy(kind: ProxyKind, values: RenderValues): Promise<ProxyProcess> {
  const dir = mkdtempSync(join(tmpdir(), `tab-relay-${kind}-`));
  // nginx's workers run as nobody when the master is root; they write request bodies under this folder.
  chmodSync(dir, 0o755);
  const site = join(dir, kind === "nginx" ? "tab-relay.conf" : "Caddyfile.site");
  const recipe = kind === "nginx" ? renderNginx(values) : renderCaddy(values);
  writeFileSync(site, recipe);
  const main = join(dir, kind === "nginx" ? "nginx.conf" : "Caddyfile");
  writeFileSync(main, kind === "nginx" ? nginxMain(dir, site) : caddyMain(dir, values.ports, site));
  let child: ChildProcess;
  let captured = "";
  if (kind === "nginx") {
    child = spawn(NGINX, ["-p", `${dir}/`, "-c", main], { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  } else {
    mkdirSync(join(dir, "home"));
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: join(dir, "home"),
      XDG_DATA_HOME: join(dir, "xdg-data"),
      XDG_CONFIG_HOME: join(dir, "xdg-config"),
    };
    child = spawn(CADDY, ["run", "--adapter", "caddyfile", "--config", main], {
      detached: true,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
  }
  running.add(child);
  const collect = (chunk: Buffer) => (captured = (captured + chunk.toString()).slice(-20_000));
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const output = () => {
    const log = join(dir, "error.log");
    return (kind === "nginx" && existsSync(log) ? readFileSync(log, "utf8").slice(-20_000) : "") + captured;
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      killGroup(child.pid, "SIGTERM");
      const late = setTimeout(() => child.pid !== undefined && killGroup(child.pid, "SIGKILL"), 5_000);
      await exited;
      clearTimeout(late);
    }
    running.delete(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForTls(child, values.ports.https, 15_000, output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { kind, ports: values.ports, recipe, output, stop };
}

/**
 * A `lookup` for clients: `SITE` (and anything else) is 127.0.0.1, so URLs and TLS name the recipe's host as a
 * browser would, with no change to /etc/hosts. Node asks for every address when it races IPv4 and IPv6.
 */
export function resolveToLoopback(
  _hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  if (options.all === true) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
}

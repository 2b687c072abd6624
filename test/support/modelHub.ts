// A stand-in for a Hugging Face-style model hub and its CDN, on a real port, for `tab-relay models` and the
// resolver. It answers as huggingface.co does (huggingface_hub src/huggingface_hub/file_download.py and
// constants.py): `GET {prefix}/{repo}/resolve/{revision}/{file}` is a 302 to the CDN with X-Repo-Commit,
// X-Linked-Etag (the sha256, quoted) and X-Linked-Size; the CDN serves the bytes with Content-Length, a strong
// ETag and Accept-Ranges, answers `Range: bytes=N-` with 206 and a Content-Range, honours If-Range, and answers a
// range past the end with 416 and `Content-Range: bytes */size` (RFC 9110 §14). A malformed Range is ignored (200).
// Faults are switched on per test: a cut, a stall, error statuses, lying lengths.
import { createHash } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { seededRandom } from "./seededRandom";

export interface HubFile {
  repo: string;
  revision: string;
  file: string;
  bytes: Buffer;
}

export interface HubRequest {
  path: string;
  host: string | undefined;
  range: string | undefined;
  ifRange: string | undefined;
  status: number;
  /** Body bytes sent (before any cut). */
  sent: number;
}

/** What the next CDN answers do wrong; each fault fires on as many answers as its count says. */
export interface HubFaults {
  /** Close the socket after this many body bytes. */
  cutAfter?: { bytes: number; times: number };
  /** Send this many body bytes, then nothing, keeping the socket open (until the client gives up). */
  stallAfter?: { bytes: number; times: number };
  /** Answer the resolve URL with this status instead. */
  status?: { code: number; times: number; retryAfter?: string };
  /** Serve these bytes instead of the file's (same length): a corrupt CDN. */
  corrupt?: boolean;
  /** Announce this total (Content-Length and Content-Range) and send that many bytes. */
  lieTotal?: number;
  /** Ignore Range and always send the whole file with 200. */
  ignoreRange?: boolean;
  /** Send this many body bytes, then wait for `until` before sending the rest. */
  pauseAfter?: { bytes: number; until: Promise<void> };
}

export interface ModelHub {
  /** Where the hub is reached: `http://127.0.0.1:PORT{prefix}` or the https origin given. */
  url: string;
  port: number;
  requests: HubRequest[];
  faults: HubFaults;
  /** CDN answers that carried body bytes. */
  transfers(): HubRequest[];
  close(): Promise<void>;
}

/** A GGUF-looking file of `size` bytes from `seed`: the magic and version 3, then noise. */
export function fakeGguf(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size);
  const random = seededRandom(seed);
  for (let i = 0; i < size; i += 4) bytes.writeUInt32LE(Math.floor(random() * 2 ** 32), Math.min(i, size - 4));
  bytes.write("GGUF", 0, "latin1");
  bytes.writeUInt32LE(3, 4);
  return bytes;
}

export function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export async function startModelHub(options: {
  files: HubFile[];
  /** A mirror's path prefix (`/mirror`). */
  prefix?: string;
  tls?: { cert: string; key: string };
  /** The origin clients use (an https name a proxy resolves); the listening address when unset. */
  publicOrigin?: string;
  /** Bytes per write, and the pause between writes (to make progress visible). */
  chunkBytes?: number;
  chunkDelayMs?: number;
}): Promise<ModelHub> {
  const prefix = options.prefix ?? "";
  const requests: HubRequest[] = [];
  const faults: HubFaults = {};
  const sockets = new Set<Socket>();
  const byPath = new Map(
    options.files.map((file) => [`${prefix}/${file.repo}/resolve/${file.revision}/${file.file}`, file]),
  );
  const bySha = new Map(options.files.map((file) => [sha256(file.bytes), file]));
  let origin = "";

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const record: HubRequest = {
      path,
      host: req.headers.host,
      range: req.headers.range,
      ifRange: req.headers["if-range"] as string | undefined,
      status: 0,
      sent: 0,
    };
    requests.push(record);
    const answer = (status: number, headers: Record<string, string | number> = {}, body = "") => {
      record.status = status;
      res.writeHead(status, { "content-length": Buffer.byteLength(body), ...headers });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") return answer(405, { allow: "GET, HEAD" });
    const file = byPath.get(path);
    if (file !== undefined) {
      if (faults.status && faults.status.times > 0) {
        faults.status.times -= 1;
        return answer(
          faults.status.code,
          faults.status.retryAfter ? { "retry-after": faults.status.retryAfter } : {},
          "hub error",
        );
      }
      const digest = sha256(file.bytes);
      // The CDN address is signed and on another path, as HF's are; the client must follow it.
      return answer(302, {
        location: `${origin}/cdn/${digest}?X-Amz-Signature=stand-in`,
        "x-repo-commit": "0".repeat(40),
        "x-linked-etag": `"${digest}"`,
        "x-linked-size": file.bytes.length,
        etag: `"${digest}"`,
      });
    }
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(path);
    const served = cdn ? bySha.get(cdn[1] as string) : undefined;
    if (served === undefined) return answer(404, { "x-error-code": "EntryNotFound" }, "Entry not found");
    let bytes = faults.corrupt ? Buffer.from(served.bytes).fill(0x5a, 64) : served.bytes;
    if (faults.lieTotal !== undefined)
      bytes = Buffer.concat([bytes, Buffer.alloc(Math.max(0, faults.lieTotal - bytes.length))]).subarray(
        0,
        faults.lieTotal,
      );
    const size = bytes.length;
    const etag = `"${sha256(served.bytes)}"`;
    let start = 0;
    let status = 200;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const ifRange = req.headers["if-range"];
    if (range && !faults.ignoreRange && (ifRange === undefined || ifRange === etag)) {
      start = Number(range[1]);
      if (start >= size) return answer(416, { "content-range": `bytes */${size}` });
      status = 206;
    }
    const end = size - 1;
    record.status = status;
    res.writeHead(status, {
      "content-type": "application/octet-stream",
      "content-length": end - start + 1,
      "accept-ranges": "bytes",
      etag,
      ...(status === 206 ? { "content-range": `bytes ${start}-${end}/${size}` } : {}),
    });
    if (req.method === "HEAD") return res.end();
    let limit = Infinity;
    let after: "cut" | "stall" | undefined;
    if (faults.cutAfter && faults.cutAfter.times > 0) {
      faults.cutAfter.times -= 1;
      limit = faults.cutAfter.bytes;
      after = "cut";
    } else if (faults.stallAfter && faults.stallAfter.times > 0) {
      faults.stallAfter.times -= 1;
      limit = faults.stallAfter.bytes;
      after = "stall";
    }
    const chunk = options.chunkBytes ?? 64 * 1024;
    let position = start;
    const pause = faults.pauseAfter;
    delete faults.pauseAfter;
    const pump = () => {
      while (position <= end) {
        if (record.sent >= limit) return; // a stall: nothing more, the socket stays open
        if (pause && record.sent >= pause.bytes && limit === Infinity) {
          limit = Number.MAX_SAFE_INTEGER;
          void pause.until.then(pump);
          return;
        }
        const next = bytes.subarray(position, Math.min(end + 1, position + chunk, position + (limit - record.sent)));
        position += next.length;
        record.sent += next.length;
        if (after === "cut" && record.sent >= limit) {
          // The connection drops once the bytes so far are on the wire, as when a network goes away mid-file.
          res.write(next, () => res.socket?.destroy());
          return;
        }
        const more = res.write(next);
        if (options.chunkDelayMs) {
          setTimeout(pump, options.chunkDelayMs);
          return;
        }
        if (!more) {
          res.once("drain", pump);
          return;
        }
      }
      res.end();
    };
    pump();
  };

  const server: Server = options.tls ? createHttpsServer(options.tls, handler) : createServer(handler);
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("tlsClientError", () => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  origin = options.publicOrigin ?? `http://127.0.0.1:${port}`;
  return {
    url: `${origin}${prefix}`,
    requests,
    faults,
    transfers: () => requests.filter((request) => request.path.startsWith("/cdn/") && request.sent > 0),
    port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

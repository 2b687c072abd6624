import type { ServerResponse } from "node:http";

/**
 * Headers decided before the answer is written (`X-Request-Id`, `X-RateLimit-*`), held on a lane's responses
 * (lane.ts) so that the completion route's success stream goes out with one `writeHead` carrying them all. Node 20
 * stores the headers given to `writeHead` as they are only when none was set on the response before; once one was,
 * every header of the call goes through `setHeader` (v20.20.2 lib/_http_server.js:367-389, `writeHead`, the
 * `this[kOutHeaders]` branch), its name lower-cased and kept in a map, which the stream's answer did for nothing.
 *
 * A response the lane did not take (express's) has nothing held, and these set its headers at once as before.
 * Whatever writes an answer other than through `writeHeadWithHeld` releases the held headers first (the lane's
 * error path, `sendJson`), so every answer carries the same headers in the same order as when each was set at once.
 */
const HELD = Symbol("heldHeaders");

type Holding = ServerResponse & { [HELD]?: string[] | undefined };

/** From now on, headers given to `setOrHold` wait on this response (names and values, in order). */
export function holdHeaders(res: ServerResponse): void {
  (res as Holding)[HELD] = [];
}

/** `res.setHeader(name, value)`, or held until the answer is written when the response holds its headers. */
export function setOrHold(res: ServerResponse, name: string, value: string): void {
  const held = (res as Holding)[HELD];
  if (held === undefined) res.setHeader(name, value);
  else held.push(name, value);
}

/** Sets the held headers on the response, in the order they were given, and stops holding. */
export function releaseHeaders(res: ServerResponse): void {
  const held = (res as Holding)[HELD];
  if (held === undefined) return;
  (res as Holding)[HELD] = undefined;
  // A stream under way has sent its headers (with the held ones in them); nothing may be set after.
  if (res.headersSent) return;
  for (let index = 0; index < held.length; index += 2) res.setHeader(held[index] ?? "", held[index + 1] ?? "");
}

/**
 * `res.writeHead(status, headers)` with the held headers before `headers` (a flat list of names and values), in one
 * call: Node stores the list as given when nothing was set on the response before (see above).
 */
export function writeHeadWithHeld(res: ServerResponse, status: number, headers: readonly string[]): void {
  const held = (res as Holding)[HELD];
  if (held === undefined) {
    res.writeHead(status, headers as string[]);
    return;
  }
  (res as Holding)[HELD] = undefined;
  for (const item of headers) held.push(item);
  res.writeHead(status, held);
}

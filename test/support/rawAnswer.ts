import { request as httpRequest } from "node:http";

/** An answer with its header lines exactly as they came off the wire, in order (`Date`'s value, which moves, elided). */
export interface RawAnswer {
  status: number;
  headers: string[];
  body: string;
}

/** POSTs `init.body` (JSON unless `init.type` says otherwise) to `url` + `path` and reads the answer as it came. */
export function rawAnswer(
  url: string,
  path: string,
  init: { key?: string; body: string; requestId?: string; type?: string },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "Content-Type": init.type ?? "application/json" };
    if (init.key !== undefined) headers.Authorization = `Bearer ${init.key}`;
    if (init.requestId !== undefined) headers["X-Request-Id"] = init.requestId;
    const req = httpRequest(`${url}${path}`, { method: "POST", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => {
        const lines: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i] ?? "";
          lines.push(`${name}: ${name.toLowerCase() === "date" ? "…" : res.rawHeaders[i + 1]}`);
        }
        resolve({ status: res.statusCode ?? 0, headers: lines, body });
      });
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

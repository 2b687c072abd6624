import { type Agent, request as httpRequest } from "node:http";

/**
 * A request to a relay over `agent`'s kept-alive `node:http` connections, the lightest client there is: the engine
 * benches compare the relay with a floor that has no client at all. Resolves once the answer has ended, each chunk
 * of it passed to `onChunk` as it arrives; rejects on a status of 300 or more.
 */
export type KeptAliveCall = (
  method: string,
  path: string,
  body: string | undefined,
  onChunk: (text: string) => void,
) => Promise<void>;

export function keptAliveCall(relayUrl: string, apiKey: string, agent: Agent): KeptAliveCall {
  const { hostname, port } = new URL(relayUrl);
  return (method, path, body, onChunk) =>
    new Promise<void>((done, fail) => {
      const req = httpRequest(
        {
          agent,
          hostname,
          port,
          method,
          path,
          headers: {
            authorization: `Bearer ${apiKey}`,
            ...(body === undefined
              ? {}
              : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }),
          },
        },
        (response) => {
          response.setEncoding("utf8");
          response.on("data", onChunk);
          response.once("end", () =>
            (response.statusCode ?? 0) < 300 ? done() : fail(new Error(`${path} answered ${response.statusCode}`)),
          );
          response.once("error", fail);
        },
      );
      req.once("error", fail);
      req.end(body);
    });
}

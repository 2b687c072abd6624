import { join } from "node:path";
import express, { Router } from "express";
import { named } from "../http/requestContext";

/** Paths the console's own router handles in the browser; any of them opens index.html. */
const APP_PATH =
  /^\/(?:$|signin$|keys$|playground$|people$|audit$|insights$|agents(?:\/[^/]+)?$|conversations\/(?:channel|dm)\/[^/]+(?:\/messages\/[^/]+)?$)/;

/**
 * How `send` (behind express.static and res.sendFile) serves the console's files: always whole. A server may ignore
 * Range (RFC 9110 §14.2), and an unsatisfiable one would be send's 416, which the error table has no code for.
 */
const SEND_OPTIONS = { acceptRanges: false } as const;

/** Serves the console's built files at `/`, and its page for the links the console and events hand out. */
export function createConsoleRouter(dir: string): Router {
  const router = Router();
  router.use(function consoleHeaders(req, res, next) {
    // The console runs only its own script, talks only to this relay, and is never framed (no clickjacking).
    res.setHeader(
      "Content-Security-Policy",
      "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "same-origin");
    // If-Match and If-Unmodified-Since keep a write from overwriting a newer version; these files are only ever read,
    // so the precondition guards nothing, and send would fail it with a 412 the error table has no code for (a 500).
    // If-None-Match and If-Modified-Since stay: they make a repeat visit a 304.
    delete req.headers["if-match"];
    delete req.headers["if-unmodified-since"];
    next();
  });
  router.use(
    named("/console"),
    express.static(dir, { ...SEND_OPTIONS, index: "index.html", maxAge: 0, fallthrough: true }),
  );
  router.get(APP_PATH, named("/console"), (req, res, next) => {
    if (!req.accepts("html")) return next();
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(join(dir, "index.html"), SEND_OPTIONS);
  });
  // A mistyped console address (`/consol`) in a browser gets the console, whose router shows its not-found page, as an
  // unknown agent id does; still a 404. A client that prefers JSON (curl's `*/*` picks the first offered: json) falls
  // through to the JSON error. The API's own prefixes never get here: their router answers its unknown paths itself.
  router.get(/.*/, named("/console"), (req, res, next) => {
    if (req.accepts(["json", "html"]) !== "html") return next();
    res.status(404);
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(join(dir, "index.html"), SEND_OPTIONS);
  });
  return router;
}

import { join } from "node:path";
import express, { Router } from "express";
import { named } from "../http/requestContext";

/** Paths the console's own router handles in the browser; any of them opens index.html. */
const APP_PATH = /^\/(?:$|signin$|keys$|agents(?:\/[^/]+)?$|conversations\/(?:channel|dm)\/[^/]+(?:\/messages\/[^/]+)?$)/;

/** Serves the console's built files at `/`, and its page for the links the console and events hand out. */
export function createConsoleRouter(dir: string): Router {
  const router = Router();
  router.use(function consoleHeaders(_req, res, next) {
    // The console runs only its own script, talks only to this relay, and is never framed (no clickjacking).
    res.setHeader("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "same-origin");
    next();
  });
  router.use(named("/console"), express.static(dir, { index: "index.html", maxAge: 0, fallthrough: true }));
  router.get(APP_PATH, named("/console"), (req, res, next) => {
    if (!req.accepts("html")) return next();
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(join(dir, "index.html"));
  });
  return router;
}

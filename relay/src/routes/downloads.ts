import { createReadStream, statSync } from "node:fs";
import { EXTENSION_DOWNLOAD_PATH, RelayError } from "@tab-relay/shared";
import { Router } from "express";
import { named } from "../http/requestContext";

/**
 * The extension's package, as `npm start` builds it in a checkout (extension/dist/tab-relay-vscode.vsix): a team
 * member installs it with `code --install-extension` without building anything. Public, as the extension holds no
 * secret; `file` undefined (an installed relay package, which carries no extension) answers 404 saying so.
 */
export function createDownloadsRouter(file: string | undefined): Router {
  const router = Router();
  router.get(EXTENSION_DOWNLOAD_PATH, named(EXTENSION_DOWNLOAD_PATH), (_req, res, next) => {
    let size: number;
    try {
      size = file === undefined ? -1 : statSync(file).size;
    } catch {
      size = -1;
    }
    if (file === undefined || size < 0)
      return next(
        new RelayError(
          "NOT_FOUND",
          "This relay has no extension package to serve: in its checkout, `npm start` (or `npm run package`) builds it",
        ),
      );
    res.setHeader("Content-Type", "application/vsix; charset=binary");
    res.setHeader("Content-Disposition", 'attachment; filename="tab-relay.vsix"');
    res.setHeader("Content-Length", String(size));
    res.setHeader("Cache-Control", "no-cache");
    createReadStream(file)
      .on("error", (error) => res.destroy(error))
      .pipe(res);
  });
  return router;
}

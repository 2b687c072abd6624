import { type RequestHandler, Router } from "express";
import { NextEditRequest, type NextEditResponse, RelayError, TAB_NEXT_EDITS_PATH } from "@tab-relay/shared";
import type { Clock } from "../clock";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import { sendJson } from "../http/errors";
import { createIdSequence } from "../http/ids";
import { named } from "../http/requestContext";
import type { Lifecycle } from "../lifecycle";
import type { NextEditService } from "../nextEdits/service";

type NextEditDeps = {
  nextEdits: NextEditService;
  clock: Clock;
  lifecycle: Lifecycle;
};

/**
 * POST /tab/next-edits (docs/api.md#next-edits): after an edit, the edit that comes next, as ranges of the excerpt
 * the client sent and their new text. Same key scope as completions; the relay reads the model's format, so a
 * client never does.
 */
export function createNextEditsRouter(
  deps: NextEditDeps,
  nextEditHandlers: readonly RequestHandler[] = createNextEditHandlers(deps),
): Router {
  const router = Router();
  router.post(TAB_NEXT_EDITS_PATH, named(TAB_NEXT_EDITS_PATH), ...nextEditHandlers);
  return router;
}

/**
 * POST /tab/next-edits after authentication, rate limiting and body reading: the scope check and the next edit.
 * They use Node's request and response API only, so the app's next-edit lane can serve them too.
 */
export function createNextEditHandlers(deps: NextEditDeps): RequestHandler[] {
  const nextId = createIdSequence("nextedit-");
  const nextEdit: RequestHandler = async (req, res) => {
    const request = parseWith(NextEditRequest, req.body);
    if (request.workspace_slug !== req.caller?.workspace.slug)
      throw new RelayError("UNAUTHORIZED", "This API key is scoped to a different workspace than workspace_slug");
    const controller = new AbortController();
    const finished = deps.lifecycle.begin(
      () => controller.abort(new RelayError("SERVICE_UNAVAILABLE", "The relay is shutting down")),
      "answer",
    );
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new RelayError("VALIDATION_ERROR", "Client disconnected"));
    };
    res.on("close", onClose);
    if (res.destroyed) onClose();
    try {
      const answer = await deps.nextEdits.run(request, controller.signal);
      if (res.destroyed) return;
      const body: NextEditResponse = {
        id: nextId(),
        object: "tab.next_edit",
        created: Math.floor(deps.clock.now() / 1000),
        model: deps.nextEdits.model,
        document_version: request.document_version,
        edits: answer.edits,
        ...(answer.reason === undefined ? {} : { reason: answer.reason }),
      };
      sendJson(res, 200, body);
    } finally {
      res.off("close", onClose);
      finished();
    }
  };
  return [requireScope("tab.complete"), nextEdit];
}

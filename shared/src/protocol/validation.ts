import type { z } from "zod";

/**
 * One line naming each offending field (up to five), e.g. `tab_context.surface: Required`. Fields are named from
 * `root` when one is given (`path.id`, `query.limit`) and from the body's top level otherwise; an issue with the body
 * as a whole (not an object, a rule across its fields) names the `body`, so every message starts with a field.
 */
export function describeZodError(error: z.ZodError, root?: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter((part) => part !== undefined && part !== "").join(".");
      return `${path === "" ? "body" : path}: ${issue.message}`;
    })
    .join("; ");
}

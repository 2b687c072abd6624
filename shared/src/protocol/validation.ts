import type { z } from "zod";

/** One line naming the first offending field, e.g. `tab_context.surface: Required`. */
export function describeZodError(error: z.ZodError, root?: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter((part) => part !== undefined && part !== "").join(".");
      return path === "" ? issue.message : `${path}: ${issue.message}`;
    })
    .join("; ");
}

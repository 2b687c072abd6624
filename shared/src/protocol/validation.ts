import type { z } from "zod";

/** What sits at `path` in `input`, or undefined when any step of it is missing. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * One line naming each offending field (up to five). A required field that is absent reads `tab_context.entity_id
 * is required`; any other problem keeps zod's detail after the field, e.g. `tab_context.surface: Invalid input:
 * expected string, received number`. Fields are named from `root` when one is given (`path.id`, `query.limit`) and
 * from the body's top level otherwise; an issue with the body as a whole (not an object, a rule across its fields)
 * names the `body`, so every message starts with a field. `parsed.input`, the value parsed, tells an absent field from
 * one of the wrong type; without it zod's own wording ("received undefined") does.
 */
export function describeZodError(error: z.ZodError, root?: string, parsed?: { input: unknown }): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter((part) => part !== undefined && part !== "").join(".");
      const field = path === "" ? "body" : path;
      const absent = parsed
        ? valueAt(parsed.input, issue.path) === undefined
        : /received undefined$/.test(issue.message);
      // A refinement's own message about an absent field says more than "is required" (it is why the field is needed).
      return issue.code !== "custom" && issue.path.length > 0 && absent
        ? `${field} is required`
        : `${field}: ${issue.message}`;
    })
    .join("; ");
}

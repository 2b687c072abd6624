import type { Compilable, CompiledQuery, QueryResult } from "kysely";
import type { Db } from "../schema";

/** An argument while a query is built: the compiled query's parameters name it by its position. */
class Slot {
  constructor(readonly index: number) {}
}

/** A scalar, or an array of them for `in (...)`; an array's length is part of the query's shape. */
type Argument = string | number | null | readonly (string | number)[];

/** Shapes kept per dialect: the hot queries, with room for each length of their `in (...)` lists. */
const MAX_SHAPES = 500;
const templates = new WeakMap<object, Map<string, CompiledQuery<unknown>>>();

/**
 * Runs the query `build` makes, building and compiling it only the first time for each dialect and shape (`name` and
 * the lengths of array arguments). Kysely builds, freezes and compiles a query's operation tree on every call: on the
 * post → webhook path that was about a tenth of the relay's time, and, until V8 had optimized the hundred-odd Kysely
 * functions it runs, most of what a freshly started relay spent more per event (docs/benchmarks.md, issue 23). The
 * SQL is the builder's own; only the arguments change from call to call.
 *
 * `build` gets stand-ins for the arguments, so it must not branch on their values: a query whose shape depends on
 * one (a filter present or not) needs a `name` per shape. It may branch on an array argument's length.
 */
export function compiledOnce<A extends readonly Argument[], R>(
  name: string,
  build: (db: Db, ...args: A) => Compilable<R>,
): (db: Db, ...args: A) => Promise<QueryResult<R>> {
  return (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    let shapes = templates.get(adapter);
    if (shapes === undefined) templates.set(adapter, (shapes = new Map<string, CompiledQuery<unknown>>()));
    let key = name;
    for (const arg of args) if (Array.isArray(arg)) key += `:${arg.length}`;
    let template = shapes.get(key) as CompiledQuery<R> | undefined;
    if (template === undefined) {
      template = compile(db, args, build);
      if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value as string);
      shapes.set(key, template);
    }
    const values = args.flat();
    const parameters = template.parameters.map((parameter) =>
      parameter instanceof Slot ? values[parameter.index] : parameter,
    );
    return db.executeQuery<R>({ ...template, parameters });
  };
}

function compile<A extends readonly Argument[], R>(
  db: Db,
  args: A,
  build: (db: Db, ...args: A) => Compilable<R>,
): CompiledQuery<R> {
  let next = 0;
  const slots = args.map((arg) => (Array.isArray(arg) ? arg.map(() => new Slot(next++)) : new Slot(next++)));
  const compiled = build(db, ...(slots as unknown as A)).compile();
  // Each argument must reach the SQL as a parameter: a stand-in turned into text or left out would run every later
  // call with the first call's meaning.
  const used = new Set(
    compiled.parameters.flatMap((parameter) => (parameter instanceof Slot ? [parameter.index] : [])),
  );
  if (used.size !== next)
    throw new Error(`query ${JSON.stringify(compiled.sql)} does not bind each of its ${next} arguments`);
  return compiled;
}

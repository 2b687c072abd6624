// A promise kept in a variable while the function awaits something else has no handler until it is read: if it
// rejects meanwhile, Node reports an unhandled rejection and the relay process ends (issue 19: a prompt's token count,
// started beside the completion and awaited after it). typescript-eslint's no-floating-promises only sees promises
// that are dropped outright, so this rule sees the ones that are held: a promise in a variable or a parameter must be
// read (awaited, returned, passed on) before the function's next `await` or `yield`, or have gone through
// `awaitedLater()` (shared/src/awaitedLater.ts), whose branded type says it has had a handler from the start.

/** The property `awaitedLater` brands its promises with (a type-level mark; no such property exists at run time). */
const BRAND = "__awaitedLater";

/** True for a type with a callable `then` that is not branded, or a union with such a member. */
function isUnhandledThenable(checker, type) {
  for (const part of type.isUnion() ? type.types : [type]) {
    const apparent = checker.getApparentType(part);
    if (checker.getPropertyOfType(apparent, BRAND)) continue;
    const then = checker.getPropertyOfType(apparent, "then");
    if (!then || !then.valueDeclaration) continue;
    if (checker.getTypeOfSymbolAtLocation(then, then.valueDeclaration).getCallSignatures().length > 0) return true;
  }
  return false;
}

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

function enclosingFunction(node) {
  for (let current = node.parent; current; current = current.parent) if (FUNCTIONS.has(current.type)) return current;
  return undefined;
}

/** A promise that cannot reject: `Promise.resolve(x)`, or `new Promise(resolve => …)` whose executor takes no reject. */
function cannotReject(init) {
  if (!init) return false;
  if (
    init.type === "CallExpression" &&
    init.callee.type === "MemberExpression" &&
    init.callee.object.type === "Identifier" &&
    init.callee.object.name === "Promise" &&
    init.callee.property.type === "Identifier" &&
    init.callee.property.name === "resolve" &&
    init.arguments.length === 0
  )
    return true;
  if (init.type === "NewExpression" && init.callee.type === "Identifier" && init.callee.name === "Promise") {
    const executor = init.arguments[0];
    return executor !== undefined && FUNCTIONS.has(executor.type) && executor.params.length < 2;
  }
  return false;
}

/** @type {import("eslint").Rule.RuleModule} */
export const noHeldPromise = {
  meta: {
    type: "problem",
    docs: {
      description:
        "A promise held across an await is read before it, or goes through awaitedLater(), so it never rejects unhandled.",
    },
    messages: {
      held: "The promise in `{{name}}` is held across this await with no handler: if it rejects meanwhile, the rejection is unhandled and ends the process. Read it before awaiting, or hold awaitedLater(promise) instead.",
    },
    schema: [],
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    if (!services?.program) return {};
    const checker = services.program.getTypeChecker();
    /** Suspension points per function: where each `await`/`yield` gives up the turn (the end of its operand). */
    const suspensions = new Map();
    const note = (node) => {
      const fn = enclosingFunction(node);
      if (!fn) return;
      const list = suspensions.get(fn) ?? [];
      list.push(node);
      suspensions.set(fn, list);
    };
    /** Bindings to check once the whole file is seen: [identifier node, the function it lives in, where it is set]. */
    const bindings = [];
    return {
      AwaitExpression: note,
      YieldExpression: note,
      ForOfStatement: (node) => {
        if (node.await) note(node);
      },
      VariableDeclarator(node) {
        if (node.id.type !== "Identifier" || !node.init || cannotReject(node.init)) return;
        const fn = enclosingFunction(node);
        if (fn) bindings.push({ id: node.id, fn, from: node.range[1] });
      },
      [":function"](node) {
        for (const param of node.params) {
          const id = param.type === "AssignmentPattern" ? param.left : param;
          if (id.type === "Identifier") bindings.push({ id, fn: node, from: node.body.range[0] });
        }
      },
      "Program:exit"() {
        for (const { id, fn, from } of bindings) {
          const points = suspensions.get(fn);
          if (!points) continue;
          const type = services.getTypeAtLocation(id);
          if (!isUnhandledThenable(checker, type)) continue;
          const [variable] = context.sourceCode
            .getDeclaredVariables(id.parent.type === "VariableDeclarator" ? id.parent : fn)
            .filter((v) => v.name === id.name);
          if (!variable) continue;
          // The first read in this function itself; a read inside a nested function happens whenever that runs.
          const reads = variable.references
            .filter((ref) => ref.isRead() && enclosingFunction(ref.identifier) === fn)
            .map((ref) => ref.identifier.range[0]);
          const firstRead = reads.length > 0 ? Math.min(...reads) : Number.POSITIVE_INFINITY;
          // An await suspends once its operand is evaluated, so a read inside that operand comes before it.
          const between = points.find((point) => {
            const suspends = point.type === "ForOfStatement" ? point.right.range[1] : point.range[1];
            return suspends > from && suspends <= firstRead;
          });
          if (between) context.report({ node: between, messageId: "held", data: { name: id.name } });
        }
      },
    };
  },
};

export default { rules: { "no-held-promise": noHeldPromise } };

/** A piece of a line of code: an identifier, a literal (number or string), space, or one other character. */
export interface Token {
  kind: "identifier" | "number" | "string" | "space" | "other";
  text: string;
  /** UTF-16 offset in the line. */
  at: number;
}

const TOKEN =
  /([A-Za-z_$][\w$]*)|(\d[\w.]*)|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\\n]|\\.)*`?)|(\s+)|([\s\S])/g;

/** The tokens of one line; a string left open at the end of the line runs to it. */
export function tokenize(line: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(line); match !== null; match = TOKEN.exec(line)) {
    const kind = match[1] ? "identifier" : match[2] ? "number" : match[3] ? "string" : match[4] ? "space" : "other";
    tokens.push({ kind, text: match[0], at: match.index });
  }
  return tokens;
}

export function isLiteral(token: Token | undefined): boolean {
  return token?.kind === "number" || token?.kind === "string";
}

/** Words that are the language's, not the person's: renaming one is never a rename. */
export const KEYWORDS = new Set(
  (
    "if else for while do return function const let var class new this super import export from default async await " +
    "try catch finally throw switch case break continue typeof instanceof in of void delete yield static public " +
    "private protected readonly interface type enum extends implements true false null undefined def fn func pub " +
    "self None True False elif lambda pass with as struct impl mut use match"
  ).split(" "),
);

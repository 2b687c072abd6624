import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";

/**
 * The repository's Markdown as GitHub renders it, as far as links are concerned: which headings a file has (and the
 * anchors GitHub gives them), which links it holds outside code, and which of those lead nowhere.
 */

/**
 * Characters GitHub drops from a heading's text when it makes the anchor. github-slugger 2.0 (the port of GitHub's
 * own html-pipeline rule that remark, markdownlint and rehype-slug use) deletes every code point of the General
 * Categories Other_Number, Open/Close/Initial/Final/Other/Dash Punctuation, Symbol, Control, Private_Use, Format,
 * Unassigned and Separator, except the space, the ASCII `-` and anything Alphabetic (Flet/github-slugger
 * script/generate-regex.mjs @ 285fe87d). Letters, marks, decimal and letter numbers and connector punctuation (`_`)
 * stay. Its generated regex.js is this, spelled with Unicode property escapes.
 */
const DROPPED =
  /(?![ -]|\p{Alphabetic})[\p{No}\p{Ps}\p{Pe}\p{Pi}\p{Pf}\p{Po}\p{Pd}\p{S}\p{Cc}\p{Co}\p{Cf}\p{Cn}\p{Z}]/gu;

/**
 * github-slugger's `slug(value)` (index.js @ v2.0.0): lower-cased, the dropped characters deleted, and each space
 * (not other whitespace, and without collapsing runs or trimming) made a `-`.
 */
export function slugOf(text: string): string {
  return text.toLowerCase().replace(DROPPED, "").replace(/ /g, "-");
}

/**
 * Anchors for a file's headings in order, as github-slugger's `BananaSlug.slug` hands them out: a repeated slug gets
 * `-1`, `-2`, ... from a counter kept per original slug, and a result that is itself taken (a heading written
 * "Usage 1" after two "Usage") is counted on until it is free.
 */
export function anchorsFor(headings: readonly string[]): string[] {
  const occurrences = new Map<string, number>();
  return headings.map((heading) => {
    const original = slugOf(heading);
    let result = original;
    while (occurrences.has(result)) {
      const next = (occurrences.get(original) ?? 0) + 1;
      occurrences.set(original, next);
      result = `${original}-${next}`;
    }
    occurrences.set(result, 0);
    return result;
  });
}

/**
 * A heading's inline Markdown as the text GitHub renders (the slug is made from that text): code spans keep their
 * content, links and emphasis their text, images and HTML tags nothing, and escaped punctuation its character.
 */
export function headingText(inline: string): string {
  return inline
    .replace(/(`+)([\s\S]*?)\1/g, (_whole, _ticks: string, code: string) => code.replace(/^ (.*) $/, "$1"))
    .replace(/!\[[^\]]*\]\([^)]*\)/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "$2")
    .replace(/(?<![\w*])([*_])(?=\S)([^*_]*?\S)\1(?![\w*])/g, "$2")
    .replace(/\\([!-/:-@[-`{-~])/g, "$1")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .trim();
}

export interface Link {
  /** As written: a URL, or a path with an optional `#anchor`. */
  target: string;
  /** 1-based line of the file. */
  line: number;
}

export interface MarkdownFile {
  /** The anchors of the headings and of HTML `id`/`name` attributes. */
  anchors: Set<string>;
  links: Link[];
  /** Bare http(s) URLs in the text, which GitHub turns into links too. */
  bareUrls: Link[];
}

const FENCE = /^ *(`{3,}|~{3,})/;

/**
 * The text with fenced code blocks blanked out (their lines kept, so line numbers stay right); an opening fence is
 * closed by a fence of the same character at least as long (CommonMark §4.5), or by the end of the file.
 */
function withoutFences(text: string): string[] {
  const lines = text.split("\n");
  let open: string | undefined;
  return lines.map((line) => {
    const fence = FENCE.exec(line)?.[1];
    if (open === undefined) {
      if (fence === undefined) return line;
      open = fence;
      return "";
    }
    if (fence !== undefined && fence[0] === open[0] && fence.length >= open.length && line.trim() === fence)
      open = undefined;
    return "";
  });
}

/** Code spans replaced by spaces of the same length, so what is left keeps its offsets; a span never crosses a blank line. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n)[\s\S])*?)(?<!`)\1(?!`)/g, (span) =>
    span.replace(/[^\n]/g, " "),
  );
}

const INLINE_LINK =
  /!?\[((?:[^[\]]|\[[^[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?\s*\)/g;
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)/gm;
const AUTOLINK = /<((?:https?|mailto|ftp):[^\s<>]*)>/g;
const HTML_LINK = /<(?:a|img)\b[^>]*?\s(?:href|src)\s*=\s*["']([^"']*)["']/gi;
const HTML_ANCHOR = /<[a-z][^>]*?\s(?:id|name)\s*=\s*["']([^"']+)["']/gi;
const BARE_URL = /\bhttps?:\/\/[^\s<>()[\]`*]+/g;

/** Reads what the link check needs from one Markdown file. */
export function parseMarkdown(text: string): MarkdownFile {
  const lines = withoutFences(text);
  const headings: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const atx = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) {
      headings.push(headingText(atx[2] ?? ""));
      continue;
    }
    // A setext heading: a paragraph line underlined with = or - (a table or list line cannot be one).
    const next = lines[i + 1];
    if (
      next !== undefined &&
      /^ {0,3}(=+|-+)[ \t]*$/.test(next) &&
      line.trim() !== "" &&
      !/^\s*([|>*+-]|\d+[.)])/.test(line)
    ) {
      headings.push(headingText(line));
      i++;
    }
  }
  const prose = withoutCodeSpans(lines.join("\n"));
  const lineAt = (index: number) => prose.slice(0, index).split("\n").length;
  const links: Link[] = [];
  const covered: [number, number][] = [];
  const add = (target: string, index: number, length: number) => {
    links.push({ target: target.replace(/^<(.*)>$/, "$1"), line: lineAt(index) });
    covered.push([index, index + length]);
  };
  for (const match of prose.matchAll(INLINE_LINK)) add(match[2] ?? "", match.index, match[0].length);
  for (const match of prose.matchAll(REFERENCE_DEFINITION)) add(match[1] ?? "", match.index, match[0].length);
  for (const match of prose.matchAll(AUTOLINK)) add(match[1] ?? "", match.index, match[0].length);
  for (const match of prose.matchAll(HTML_LINK)) add(match[1] ?? "", match.index, match[0].length);
  const bareUrls: Link[] = [];
  for (const match of prose.matchAll(BARE_URL)) {
    if (covered.some(([start, end]) => match.index >= start && match.index < end)) continue;
    bareUrls.push({ target: match[0].replace(/[.,:;!?'"]+$/, ""), line: lineAt(match.index) });
  }
  const anchors = new Set(anchorsFor(headings));
  for (const match of prose.matchAll(HTML_ANCHOR)) anchors.add(match[1] as string);
  return { anchors, links, bareUrls };
}

/**
 * Hosts and paths that stand for "put yours here": the reserved example domains and top-level names (RFC 2606,
 * RFC 6761), `your-org` style path parts, and a code host's bare root, which is where a placeholder repository URL
 * usually ends up.
 */
export function placeholderReason(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a valid URL";
  }
  const host = parsed.hostname.toLowerCase();
  if (/(^|\.)example\.(com|org|net)$/.test(host) || /\.(example|invalid|test|localhost)$/.test(host))
    return `${host} is a reserved example host`;
  if (
    /(^|[/.-])your[-_]?(org|organi[sz]ation|name|user(name)?|repo(sitory)?|company|project|domain|account)\b/i.test(
      `${host}${parsed.pathname}`,
    )
  ) {
    return "a placeholder name";
  }
  if (/[<>{}]|%3C|%3E|%7B|%7D/i.test(url)) return "a template placeholder";
  if (/^(www\.)?(github|gitlab)\.com$/.test(host) && parsed.pathname.split("/").filter(Boolean).length < 2)
    return `${host} without an owner and repository`;
  return undefined;
}

export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  problem: string;
}

export interface LinkReport {
  problems: LinkProblem[];
  /** Every external link and bare URL, to list. */
  external: { file: string; line: number; url: string }[];
}

/** GitHub's line anchors in a file's source view (`#L12`, `#L12-L20`). */
const LINE_ANCHOR = /^L\d+(-L\d+)?$/;

/**
 * Checks every link of `files` (paths relative to `root`): a relative link must name a file or folder inside `root`,
 * and its `#anchor` one of the target's headings; an external link must not point at a placeholder.
 */
export function checkLinks(root: string, files: readonly string[]): LinkReport {
  const problems: LinkProblem[] = [];
  const external: LinkReport["external"] = [];
  const parsed = new Map<string, MarkdownFile>();
  const read = (path: string) => {
    let file = parsed.get(path);
    if (!file) parsed.set(path, (file = parseMarkdown(readFileSync(path, "utf8"))));
    return file;
  };
  const top = resolve(root);
  for (const name of files) {
    const path = resolve(top, name);
    const file = read(path);
    const report = (line: number, target: string, problem: string) =>
      problems.push({ file: name, line, target, problem });
    for (const { target, line } of file.bareUrls) {
      external.push({ file: name, line, url: target });
      const reason = placeholderReason(target);
      if (reason) report(line, target, `placeholder URL: ${reason}`);
    }
    for (const { target, line } of file.links) {
      if (/^https?:/i.test(target)) {
        external.push({ file: name, line, url: target });
        const reason = placeholderReason(target);
        if (reason) report(line, target, `placeholder URL: ${reason}`);
        continue;
      }
      if (/^mailto:/i.test(target)) continue;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        report(line, target, "a link scheme other than http, https or mailto");
        continue;
      }
      if (target === "") {
        report(line, target, "an empty link");
        continue;
      }
      const hash = target.indexOf("#");
      const pathPart = hash === -1 ? target : target.slice(0, hash);
      const anchor = hash === -1 ? undefined : target.slice(hash + 1);
      let decoded: string;
      try {
        decoded = decodeURIComponent(pathPart.replace(/\?.*$/, ""));
      } catch {
        report(line, target, "a path with a broken %-escape");
        continue;
      }
      // GitHub resolves a leading / from the repository's root.
      const destination =
        decoded === "" ? path : decoded.startsWith("/") ? join(top, decoded) : resolve(dirname(path), decoded);
      const inside = relative(top, destination);
      if (inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
        report(line, target, "leaves the repository");
        continue;
      }
      if (!existsSync(destination)) {
        report(line, target, `no such file: ${relative(top, destination)}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(destination).isDirectory()) {
        report(line, target, "an anchor on a folder");
        continue;
      }
      if (extname(destination).toLowerCase() !== ".md") {
        if (!LINE_ANCHOR.test(anchor))
          report(line, target, "an anchor other than a line (#L12) on a file that is not Markdown");
        continue;
      }
      if (!read(destination).anchors.has(anchor)) {
        const known = [...read(destination).anchors].join(", ");
        report(
          line,
          target,
          `no heading with the anchor #${anchor} in ${relative(top, destination)} (it has: ${known})`,
        );
      }
    }
  }
  return { problems, external };
}

/** The Markdown files of `dir` and its folders, relative to `root`, without node_modules and build output. */
export function markdownUnder(root: string, dir: string): string[] {
  const start = join(root, dir);
  if (!existsSync(start)) return [];
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.toLowerCase().endsWith(".md")) found.push(relative(root, path));
    }
  };
  walk(start);
  return found.sort();
}

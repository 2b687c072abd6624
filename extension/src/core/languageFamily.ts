/**
 * Which files compare with which: the same language, or languages that share identifiers in one project (a
 * TypeScript file imports from JavaScript, a Vue component from TypeScript). Copilot found neighbours in other
 * languages unhelpful and compares within a language only (considerNeighborFile in microsoft/vscode-copilot-chat,
 * src/extension/completions-core/vscode-node/lib/src/prompt/similarFiles/neighborFiles.ts).
 */
export function languageFamily(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  const extension = dot <= 0 ? name : name.slice(dot + 1);
  return FAMILIES[extension] ?? extension;
}

const FAMILIES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries({
    js: ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "vue", "svelte", "astro"],
    python: ["py", "pyi", "pyx"],
    c: ["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "ipp", "inl", "m", "mm", "cu", "cuh"],
    jvm: ["java", "kt", "kts", "scala", "groovy"],
    dotnet: ["cs", "fs", "vb"],
    ruby: ["rb", "erb", "rake"],
    shell: ["sh", "bash", "zsh"],
    yaml: ["yml", "yaml"],
    markdown: ["md", "markdown", "mdx"],
  }).flatMap(([family, extensions]) => extensions.map((extension) => [extension, family])),
);

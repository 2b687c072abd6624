import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ContextSnippet, type TabContext, formatSnippets } from "@tab-relay/shared";
import { fimPrompt } from "./modes/fim";
import {
  FIM_FAMILIES,
  type FimFamily,
  customTemplate,
  customTemplateProblems,
  familyForModel,
  fimTemplate,
} from "./templates";

const PREFIX = "def add(a, b):\n    return ";
const SUFFIX = "\n\nprint(add(1, 2))\n";
const SNIPPETS: ContextSnippet[] = [
  { path: "lib/util.py", text: "def double(x):\n    return 2 * x" },
  { path: "web/style.css", text: "body { margin: 0; }" },
];

function context(overrides: Partial<TabContext> = {}): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "doc-1",
    document_type: "plaintext",
    file_path: "app/main.py",
    code_language: "python",
    active_text_before_cursor: PREFIX,
    active_text_after_cursor: SUFFIX,
    ...overrides,
  };
}

const withSnippets = (overrides: Partial<TabContext> = {}) =>
  context({ surrounding_context: formatSnippets(SNIPPETS), ...overrides });

describe("picking the FIM family from the model name", () => {
  const cases: [string, FimFamily | undefined][] = [
    ["Qwen/Qwen2.5-Coder-7B", "qwen-coder"],
    ["qwen2.5-coder:1.5b-base", "qwen-coder"],
    ["/models/qwen2.5-coder-1.5b-q8_0.gguf", "qwen-coder"],
    ["Qwen/Qwen2.5-7B-Instruct", undefined],
    ["Qwen/CodeQwen1.5-7B", undefined],
    ["bigcode/starcoder2-15b", "starcoder2"],
    ["starcoder2:3b", "starcoder2"],
    ["bigcode/starcoderbase-1b", undefined],
    ["codellama/CodeLlama-7b-hf", "codellama"],
    ["codellama:13b-code", "codellama"],
    ["TheBloke/Code-Llama-7B-GGUF", "codellama"],
    ["deepseek-ai/deepseek-coder-6.7b-base", "deepseek-coder"],
    ["deepseek-coder-v2:16b-lite-base", "deepseek-coder"],
    ["deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", undefined],
    ["deepseek-chat", undefined],
    ["mistralai/Codestral-22B-v0.1", "codestral"],
    ["codestral-latest", "codestral"],
    ["google/codegemma-2b", "codegemma"],
    ["codegemma:7b-code", "codegemma"],
    ["meta-llama/Llama-3.1-8B-Instruct", undefined],
    ["gpt-3.5-turbo-instruct", undefined],
  ];
  for (const [model, family] of cases) {
    test(`${model} → ${family ?? "no family"}`, () => {
      assert.equal(familyForModel(model), family);
    });
  }
});

describe("built-in FIM templates: exact prompt bytes", () => {
  const expected: Record<FimFamily, { plain: string; withContext: string; stops: string[] }> = {
    "qwen-coder": {
      plain: `<|fim_prefix|>${PREFIX}<|fim_suffix|>${SUFFIX}<|fim_middle|>`,
      withContext:
        "<|repo_name|>acme\n<|file_sep|>lib/util.py\ndef double(x):\n    return 2 * x\n<|file_sep|>web/style.css\nbody { margin: 0; }\n" +
        `<|file_sep|>app/main.py\n<|fim_prefix|>${PREFIX}<|fim_suffix|>${SUFFIX}<|fim_middle|>`,
      stops: [
        "<|endoftext|>",
        "<|file_sep|>",
        "<|fim_prefix|>",
        "<|fim_pad|>",
        "<|fim_suffix|>",
        "<|fim_middle|>",
        "<|repo_name|>",
        "<|im_start|>",
        "<|im_end|>",
      ],
    },
    starcoder2: {
      plain: `<fim_prefix>${PREFIX}<fim_suffix>${SUFFIX}<fim_middle>`,
      withContext:
        "<repo_name>acme<file_sep>lib/util.py\ndef double(x):\n    return 2 * x<file_sep>web/style.css\nbody { margin: 0; }" +
        `<file_sep><fim_prefix>app/main.py\n${PREFIX}<fim_suffix>${SUFFIX}<fim_middle>`,
      stops: ["<|endoftext|>", "<file_sep>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"],
    },
    codellama: {
      plain: `<PRE> ${PREFIX} <SUF>${SUFFIX} <MID>`,
      withContext: `<PRE> # lib/util.py\ndef double(x):\n    return 2 * x\n\n\n/* web/style.css */\nbody { margin: 0; }\n\n\n# app/main.py\n${PREFIX} <SUF>${SUFFIX} <MID>`,
      stops: ["<EOT>", "<PRE>", "<SUF>", "<MID>"],
    },
    "deepseek-coder": {
      plain: `<｜fim▁begin｜>${PREFIX}<｜fim▁hole｜>${SUFFIX}<｜fim▁end｜>`,
      withContext: `<｜fim▁begin｜># lib/util.py\ndef double(x):\n    return 2 * x\n\n\n/* web/style.css */\nbody { margin: 0; }\n\n\n# app/main.py\n${PREFIX}<｜fim▁hole｜>${SUFFIX}<｜fim▁end｜>`,
      stops: ["<｜end▁of▁sentence｜>", "<|EOT|>", "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"],
    },
    codestral: {
      plain: `[SUFFIX]${SUFFIX}[PREFIX] ${PREFIX}`,
      withContext: `[SUFFIX]${SUFFIX}[PREFIX] # lib/util.py\ndef double(x):\n    return 2 * x\n\n\n/* web/style.css */\nbody { margin: 0; }\n\n\n# app/main.py\n${PREFIX}`,
      stops: ["[PREFIX]", "[SUFFIX]", "[MIDDLE]"],
    },
    codegemma: {
      plain: `<|fim_prefix|>${PREFIX}<|fim_suffix|>${SUFFIX}<|fim_middle|>`,
      withContext: `<|fim_prefix|># lib/util.py\ndef double(x):\n    return 2 * x\n\n\n/* web/style.css */\nbody { margin: 0; }\n\n\n# app/main.py\n${PREFIX}<|fim_suffix|>${SUFFIX}<|fim_middle|>`,
      stops: ["<|file_separator|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<end_of_turn>", "<eos>"],
    },
  };

  for (const family of FIM_FAMILIES) {
    test(`${family}: without context from other files`, () => {
      assert.equal(fimPrompt(fimTemplate(family), context()), expected[family].plain);
    });
    test(`${family}: with context from other files`, () => {
      assert.equal(fimPrompt(fimTemplate(family), withSnippets()), expected[family].withContext);
    });
    test(`${family}: stop sequences`, () => {
      assert.deepEqual(fimTemplate(family).stops, expected[family].stops);
    });
  }

  test("DeepSeek's tokens are the full-width bar U+FF5C (EF BD 9C) and U+2581 (E2 96 81), byte for byte", () => {
    const prompt = fimPrompt(
      fimTemplate("deepseek-coder"),
      context({ active_text_before_cursor: "a", active_text_after_cursor: "b" }),
    );
    const ascii = (text: string) => Buffer.from(text, "latin1").toString("hex");
    const token = (word: string) => `3c${"efbd9c"}${ascii("fim")}${"e29681"}${ascii(word)}${"efbd9c"}3e`;
    assert.equal(
      Buffer.from(prompt, "utf8").toString("hex"),
      `${token("begin")}${ascii("a")}${token("hole")}${ascii("b")}${token("end")}`,
    );
  });

  test("snippets without a path and a file without one get stand-in names, or comment lines", () => {
    const loose = context({ file_path: undefined, surrounding_context: "free text\nmore" });
    assert.equal(
      fimPrompt(fimTemplate("qwen-coder"), loose),
      `<|repo_name|>acme\n<|file_sep|>context\nfree text\nmore\n<|file_sep|>untitled\n<|fim_prefix|>${PREFIX}<|fim_suffix|>${SUFFIX}<|fim_middle|>`,
    );
    assert.equal(
      fimPrompt(fimTemplate("deepseek-coder"), loose),
      `<｜fim▁begin｜># free text\n# more\n\n\n# untitled\n${PREFIX}<｜fim▁hole｜>${SUFFIX}<｜fim▁end｜>`,
    );
  });

  test("the path comment of a snippet follows its own language, else the edited file's", () => {
    const ts = context({
      file_path: "src/app.ts",
      code_language: "typescript",
      surrounding_context: formatSnippets([
        { path: "README", text: "hello" },
        { path: "q.sql", text: "select 1" },
      ]),
    });
    assert.equal(
      fimPrompt(fimTemplate("codegemma"), ts).split("<|fim_suffix|>")[0],
      `<|fim_prefix|>// README\nhello\n\n\n-- q.sql\nselect 1\n\n\n// src/app.ts\n${PREFIX}`,
    );
  });
});

describe("custom FIM templates", () => {
  test("fill {prefix}, {suffix} and {context}, and stop on their own control tokens", () => {
    const template = customTemplate("<fim_prefix>{context}{prefix}<fim_suffix>{suffix}<fim_middle>");
    assert.equal(fimPrompt(template, context()), `<fim_prefix>${PREFIX}<fim_suffix>${SUFFIX}<fim_middle>`);
    assert.equal(
      fimPrompt(template, withSnippets()),
      `<fim_prefix># lib/util.py\ndef double(x):\n    return 2 * x\n\n\n/* web/style.css */\nbody { margin: 0; }\n\n\n# app/main.py\n${PREFIX}<fim_suffix>${SUFFIX}<fim_middle>`,
    );
    assert.deepEqual(template.stops, ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"]);
  });

  test("literals that are ordinary code do not become stops", () => {
    assert.deepEqual(customTemplate("# {context}\n[SUFFIX]{suffix}[PREFIX] {prefix}").stops, ["[SUFFIX]", "[PREFIX]"]);
    assert.deepEqual(customTemplate("// file\n{prefix}").stops, []);
  });

  test("text in the prefix that reads like a placeholder is left alone", () => {
    const prompt = fimPrompt(
      customTemplate("<P>{prefix}<S>{suffix}<M>"),
      context({ active_text_before_cursor: 'f"{suffix}{prefix}"', active_text_after_cursor: "" }),
    );
    assert.equal(prompt, '<P>f"{suffix}{prefix}"<S><M>');
  });

  test("problems: no {prefix}, unknown placeholders", () => {
    assert.deepEqual(customTemplateProblems("<P>{prefix}<S>{suffix}<M>"), []);
    assert.deepEqual(customTemplateProblems("{suffix}{prompt}{}"), [
      "a custom template must contain {prefix}",
      "unknown placeholders {prompt}, {} (known: {prefix}, {suffix}, {context})",
    ]);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FIM_FAMILIES } from "../../providers/upstream/templates";
import {
  DEFAULT_HUB_URL,
  MODEL_REGISTRY,
  ModelEntrySchema,
  RegistryFileError,
  buildRegistry,
  fileUrl,
  findModel,
} from "./registry";

describe("the model registry", () => {
  test("holds the models the issue names, each obeying the schema an operator's file is held to", () => {
    assert.deepEqual(
      MODEL_REGISTRY.map((entry) => entry.name),
      [
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-3b",
        "qwen2.5-coder-7b",
        "starcoder2-3b",
        "deepseek-coder-1.3b",
        "codegemma-2b",
      ],
    );
    for (const entry of MODEL_REGISTRY) {
      const parsed = ModelEntrySchema.safeParse(entry);
      assert.ok(parsed.success, `${entry.name}: ${parsed.error?.message}`);
      assert.ok(FIM_FAMILIES.includes(entry.family));
      assert.ok(entry.sources.length > 0, `${entry.name} cites where its hash and size come from`);
      assert.ok(entry.license.url.startsWith("https://"), `${entry.name} links its licence`);
      if (!entry.verified) assert.ok(entry.note, `${entry.name} says why it is unverified`);
    }
    assert.equal(new Set(MODEL_REGISTRY.map((entry) => entry.file)).size, MODEL_REGISTRY.length, "files are unique");
  });

  test("the hashes and sizes are the ones read at their sources", () => {
    const pick = (name: string) => {
      const entry = findModel(MODEL_REGISTRY, name);
      assert.ok(entry);
      return [entry.sha256, entry.bytes, entry.bytesExact, entry.verified];
    };
    // Hugging Face LFS pointers (blob and blame pages) of ggml-org's files.
    assert.deepEqual(pick("qwen2.5-coder-0.5b"), [
      "d0f8cd6c49bab52a0abdbe47948518b1f4d9b1a8a2a6825099cea31cea10ac56",
      531_068_128,
      true,
      true,
    ]);
    assert.deepEqual(pick("qwen2.5-coder-1.5b"), [
      "29871c94d15727a6e243f79a37113d4ae625a6215b5e800bf41a23af2da32832",
      1_646_573_056,
      true,
      true,
    ]);
    // TabbyML/registry-tabby models.json @ 7a9d54eb.
    assert.equal(pick("starcoder2-3b")[0], "0499b8d046c56934c9741fd00c6206a5f7ca0eb42b59304ab7f4a20cd2f28ebf");
    assert.equal(pick("deepseek-coder-1.3b")[0], "f25baf6ed77e1f651af3b5359fadc4e77656621a7660f36624de70d631d110d2");
    assert.equal(pick("codegemma-2b")[0], "a5dc633538a2e152d8e9f69766135b4bffcc5611d6dd84200e280419f7dc1eba");
    assert.equal(pick("qwen2.5-coder-7b")[3], false, "read from identical copies only");
  });

  test("a name is found in any case; the URL is the hub's resolve URL, on a mirror too", () => {
    const entry = findModel(MODEL_REGISTRY, " Qwen2.5-Coder-1.5B ");
    assert.ok(entry);
    assert.equal(entry.name, "qwen2.5-coder-1.5b");
    assert.equal(
      fileUrl(entry, DEFAULT_HUB_URL),
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF/resolve/8be1b8a895a84beea772817caaa71eba6b6e0d07/qwen2.5-coder-1.5b-q8_0.gguf",
    );
    assert.equal(
      fileUrl({ repo: "o/r", revision: "main", file: "a b.gguf" }, "https://hf-mirror.example/prefix/"),
      "https://hf-mirror.example/prefix/o/r/resolve/main/a%20b.gguf",
    );
  });

  test("an operator's registry file adds entries and replaces same-named ones, and is checked", () => {
    const sha = "a".repeat(64);
    const registry = buildRegistry(
      JSON.stringify({
        models: [
          {
            name: "my-coder",
            family: "starcoder2",
            repo: "me/my-coder-GGUF",
            file: "my-coder.gguf",
            bytes: 10,
            sha256: sha,
          },
          {
            name: "qwen2.5-coder-0.5b",
            family: "qwen-coder",
            repo: "mirror/q",
            file: "qwen2.5-coder-0.5b-q8_0.gguf",
            bytes: 5,
            sha256: sha,
          },
        ],
      }),
    );
    const mine = findModel(registry, "my-coder");
    assert.deepEqual([mine?.revision, mine?.verified, mine?.bytesExact, mine?.label], ["main", true, true, "my-coder"]);
    assert.equal(findModel(registry, "qwen2.5-coder-0.5b")?.repo, "mirror/q");
    assert.equal(registry.length, MODEL_REGISTRY.length + 1);

    const bad = (models: unknown, message: RegExp) =>
      assert.throws(
        () => buildRegistry(JSON.stringify({ models })),
        (error: unknown) => {
          assert.ok(error instanceof RegistryFileError);
          assert.match(error.message, message);
          return true;
        },
      );
    const good = { name: "x", family: "qwen-coder", repo: "o/r", file: "x.gguf", bytes: 1, sha256: sha };
    bad([{ ...good, file: "../../etc/x.gguf" }], /models\.0\.file: a file name ending in \.gguf \(no folders\)/);
    bad([{ ...good, file: ".hidden.gguf" }], /models\.0\.file/);
    bad([{ ...good, sha256: "ABC" }], /models\.0\.sha256: 64 lower-case hex digits/);
    bad([{ ...good, family: "gpt" }], /models\.0\.family/);
    bad([{ ...good, bytes: 2 ** 51 }], /models\.0\.bytes/);
    bad(
      [{ ...good, file: "qwen2.5-coder-1.5b-q8_0.gguf" }],
      /x: file qwen2\.5-coder-1\.5b-q8_0\.gguf is already qwen2\.5-coder-1\.5b's/,
    );
    assert.throws(() => buildRegistry("{", "models.json"), /models\.json is not JSON/);
  });
});

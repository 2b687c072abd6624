import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig, loadModelsConfig, proxyFromEnv } from "../../config";
import { proxyFor } from "./transport";

const url = (text: string) => new URL(text);

describe("proxies for model downloads", () => {
  test("https URLs take HTTPS_PROXY, else HTTP_PROXY; http URLs take HTTP_PROXY only", () => {
    const both = { httpProxy: "http://h:1", httpsProxy: "http://s:2", noProxy: undefined };
    assert.equal(proxyFor(url("https://huggingface.co/x"), both), "http://s:2");
    assert.equal(proxyFor(url("http://mirror.local/x"), both), "http://h:1");
    const httpOnly = { httpProxy: "http://h:1", httpsProxy: undefined, noProxy: undefined };
    assert.equal(proxyFor(url("https://huggingface.co/x"), httpOnly), "http://h:1");
    const httpsOnly = { httpProxy: undefined, httpsProxy: "http://s:2", noProxy: undefined };
    assert.equal(proxyFor(url("http://mirror.local/x"), httpsOnly), undefined);
  });

  test("NO_PROXY names hosts, host:port, suffixes and * that go direct, as undici reads it", () => {
    const proxy = (noProxy: string, target: string) =>
      proxyFor(url(target), { httpProxy: undefined, httpsProxy: "http://s:2", noProxy });
    assert.equal(proxy("huggingface.co", "https://huggingface.co/a"), undefined);
    assert.equal(proxy("huggingface.co", "https://cdn.huggingface.co/a"), "http://s:2", "an exact name is exact");
    assert.equal(proxy(".huggingface.co", "https://cdn.huggingface.co/a"), undefined);
    assert.equal(proxy("*.hf.co", "https://cas-bridge.xethub.hf.co/a"), undefined);
    assert.equal(proxy("mirror:8443", "https://mirror:8443/a"), undefined);
    assert.equal(proxy("mirror:8443", "https://mirror/a"), "http://s:2", "another port is proxied");
    assert.equal(proxy("a, b  huggingface.co", "https://HuggingFace.co/a"), undefined);
    assert.equal(proxy("*", "https://anything/a"), undefined);
  });

  test("the environment is read once in config: lower case first, a bare host:port is http, nonsense is named", () => {
    assert.deepEqual(proxyFromEnv({ https_proxy: "http://low:1", HTTPS_PROXY: "http://up:2", NO_PROXY: "x" }), {
      httpProxy: undefined,
      httpsProxy: "http://low:1",
      noProxy: "x",
    });
    assert.equal(proxyFromEnv({ HTTP_PROXY: "proxy.corp:3128" }).httpProxy, "http://proxy.corp:3128");
    const problems: string[] = [];
    proxyFromEnv({ HTTPS_PROXY: "socks5://p:1" }, problems);
    assert.deepEqual(problems, ["HTTPS_PROXY: must be an http:// or https:// proxy URL"]);
  });

  test("a hub URL with credentials is refused, so they never show in messages", () => {
    assert.throws(
      () => loadModelsConfig({ TAB_RELAY_MODEL_HUB_URL: "https://me:secret@mirror.example" }, { dataDir: "d" }),
      /TAB_RELAY_MODEL_HUB_URL \(--model-hub-url\): must not carry a user name or password/,
    );
  });

  test("serve starts with a proxy it cannot use, keeping the problem for a download to report", () => {
    const config = loadConfig({ TAB_RELAY_DATA: "d", HTTPS_PROXY: "socks5://p:1" });
    assert.deepEqual(config.models.proxyProblems, ["HTTPS_PROXY: must be an http:// or https:// proxy URL"]);
    assert.equal(config.models.proxy.httpsProxy, undefined);
    assert.equal(config.models.hubUrl, "https://huggingface.co");
  });

  test("tab-relay models reads its data folder, hub and registry settings with every problem at once", () => {
    const config = loadModelsConfig(
      { TAB_RELAY_MODEL_HUB_URL: "https://hf-mirror.example/", HTTPS_PROXY: "http://p:1" },
      { dataDir: "d" },
    );
    assert.deepEqual(
      [config.dataDir, config.hubUrl, config.registryFile, config.proxy.httpsProxy],
      ["d", "https://hf-mirror.example", undefined, "http://p:1"],
    );
    assert.equal(loadModelsConfig({}, { dataDir: "d" }).hubUrl, "https://huggingface.co");
    assert.throws(
      () =>
        loadModelsConfig(
          { TAB_RELAY_MODEL_HUB_URL: "ftp://x", HTTPS_PROXY: "gopher://x" },
          { dataDir: "d", modelRegistry: "r.json" },
        ),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, [
          "TAB_RELAY_MODEL_HUB_URL (--model-hub-url): Invalid URL",
          "HTTPS_PROXY: must be an http:// or https:// proxy URL",
        ]);
        return true;
      },
    );
  });
});

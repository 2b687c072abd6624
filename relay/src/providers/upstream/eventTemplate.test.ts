import assert from "node:assert/strict";
import { test } from "node:test";
import { EventTemplate } from "./eventTemplate";
import { chatText, completionText, field } from "./json";

const isError = (json: unknown) => field(json, "error") != null || field(json, "object") === "error";

/** What the provider's slow path reads from an event: its text, or undefined for JSON.parse's refusal. */
function slow(extract: (json: unknown) => string | undefined, data: string): string | undefined {
  try {
    return extract(JSON.parse(data)) ?? "";
  } catch {
    return undefined;
  }
}

const chunk = (content: string, id = "chatcmpl-7") =>
  `{"id":"${id}","object":"chat.completion.chunk","created":1764288000,"model":"m","choices":[{"index":0,"delta":{"content":${content}},"finish_reason":null}]}`;

/** A template learned from `first`, then `data` read by it: whatever it answers must be what parsing gives. */
function check(extract: (json: unknown) => string | undefined, first: string, data: string): string | undefined {
  const template = new EventTemplate(extract, isError);
  const learned = slow(extract, first);
  if (learned !== undefined) template.learn(first, learned);
  const fast = template.text(data);
  if (fast !== undefined) assert.equal(fast, slow(extract, data), `${first} then ${data}`);
  return fast;
}

test("a chunk of the same stream is read by the template, with the text JSON.parse gives", () => {
  assert.equal(check(chatText, chunk('"items"'), chunk('".reduce((sum"')), ".reduce((sum");
  assert.equal(
    check(chatText, chunk('"a"'), chunk('"tab\\tquote\\"slash\\\\\\/u\\u00e9\\ud83d\\ude42"')),
    'tab\tquote"slash\\/ué🙂',
  );
  assert.equal(check(chatText, chunk('"a"'), chunk('""')), "");
  assert.equal(
    check(completionText, '{"choices":[{"text":"x","index":0}]}', '{"choices":[{"text":"yz","index":0}]}'),
    "yz",
  );
});

test("anything that is not the template around one well-formed string goes to JSON.parse", () => {
  const first = chunk('"items"');
  for (const content of [
    '"un"escaped"',
    '"ends with a backslash\\"',
    '"bad escape \\x41"',
    '"short \\u12"',
    '"raw\ttab"',
    '"raw\nline"',
    "null",
    "42",
    '"a","content":"b"',
    '"a"} ,"x":{"y":"b"',
    "'single'",
    '"open',
  ]) {
    assert.equal(check(chatText, first, chunk(content)), undefined, content);
  }
  // Another stream's id, another shape, an error, a long event.
  assert.equal(check(chatText, first, chunk('"x"', "chatcmpl-8")), undefined);
  assert.equal(check(chatText, first, `{"error":{"message":"boom"},${chunk('"x"').slice(1)}`), undefined);
  assert.equal(check(chatText, first, chunk(JSON.stringify("x".repeat(5_000)))), undefined);
});

test("a template is learned only where the extractor reads the text", () => {
  // The text's bytes inside another string are no literal; as a key or another value, the probe refuses them.
  const quoted = `{"note":"say \\"hi\\" twice","choices":[{"delta":{"content":"hi"}}]}`;
  assert.equal(check(chatText, quoted, quoted.replace('"content":"hi"', '"content":"yo"')), "yo");
  const key = `{"hi":1,"choices":[{"delta":{"content":"hi"}}]}`;
  assert.equal(check(chatText, key, `{"hi":1,"choices":[{"delta":{"content":"yo"}}]}`), undefined);
  const value = `{"x":"hi","choices":[{"delta":{"content":"hi"}}]}`;
  assert.equal(check(chatText, value, `{"x":"hi","choices":[{"delta":{"content":"yo"}}]}`), undefined);
  const duplicate = `{"choices":[{"delta":{"content":"hi","content":"hi"}}]}`;
  assert.equal(check(chatText, duplicate, `{"choices":[{"delta":{"content":"yo","content":"hi"}}]}`), undefined);
  // An error event is never a template.
  const failing = `{"error":"hi","choices":[{"delta":{"content":"hi"}}]}`;
  assert.equal(check(chatText, failing, `{"error":"hi","choices":[{"delta":{"content":"yo"}}]}`), undefined);
  // `message.content` is read only when there is no delta content.
  assert.equal(
    check(chatText, `{"choices":[{"message":{"content":"a"}}]}`, `{"choices":[{"message":{"content":"b"}}]}`),
    "b",
  );
});

test("generated events: the template never answers other than JSON.parse", () => {
  let seed = 23;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const alphabet = ['"', "\\", "a", "é", "🙂", "\n", "\u0001", "u", "0", "{", "}", ",", ":", " ", "/", "\uD800"];
  const pick = () => alphabet[Math.floor(random() * alphabet.length)] ?? "a";
  let fast = 0;
  for (let n = 0; n < 20_000; n++) {
    let body = "";
    for (let i = Math.floor(random() * 8); i > 0; i--) body += pick();
    // Half are well-formed literals of random text, half random bytes between quotes.
    const content = random() < 0.5 ? JSON.stringify(body) : `"${body}"`;
    const data = random() < 0.9 ? chunk(content) : `${chunk(content)} `;
    if (check(chatText, chunk('"first"'), data) !== undefined) fast++;
  }
  assert.ok(fast > 5_000, `only ${fast} of 20,000 read by the template`);
});

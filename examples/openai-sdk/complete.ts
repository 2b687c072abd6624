/**
 * The official `openai` SDK as a Tab client, typed: the relay's OpenAI-compatible base URL serves both
 * `models.list()` and `chat.completions.create()`, and `TabCompletionCreateParams` adds `tab_context` to the SDK's
 * own request type. Run it against a relay: KEY=svc_ws_... npx tsx examples/openai-sdk/complete.ts [http://127.0.0.1:8787]
 */
import OpenAI from "openai";
import type { TabCompletionCreateParams } from "@tab-relay/shared";

/** The SDK pointed at a relay: `{relay}/api/v1/tab/openai` (docs/api.md#with-the-openai-sdk). */
export function tabClient(relayUrl: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${relayUrl}/api/v1/tab/openai`, apiKey });
}

/** Streams a suggestion for the text before the cursor, handing each fragment to `onText`; resolves to all of it. */
export async function complete(
  client: OpenAI,
  workspaceSlug: string,
  textBeforeCursor: string,
  onText: (text: string) => void = () => {},
): Promise<string> {
  const params: TabCompletionCreateParams<OpenAI.Chat.ChatCompletionCreateParamsStreaming> = {
    model: "tab-v1",
    messages: [],
    stream: true,
    tab_context: {
      surface: "code",
      workspace_slug: workspaceSlug,
      entity_id: "a.js",
      document_type: "plaintext",
      active_text_before_cursor: textBeforeCursor,
    },
  };
  let text = "";
  for await (const chunk of await client.chat.completions.create(params)) {
    const fragment = chunk.choices[0]?.delta.content ?? "";
    text += fragment;
    onText(fragment);
  }
  return text;
}

async function main(): Promise<void> {
  const client = tabClient(process.argv[2] ?? "http://127.0.0.1:8787", process.env["KEY"] ?? "");
  const models = await client.models.list();
  process.stdout.write(`models: ${models.data.map((model) => model.id).join(", ")}\n`);
  await complete(
    client,
    process.env["WORKSPACE"] ?? "default",
    "function add(a, b) {\n  return a + b;\n}\nfunction add(a, b) {",
    (text) => process.stdout.write(text),
  );
  process.stdout.write("\n");
}

if (process.argv[1]?.endsWith("complete.ts")) void main();

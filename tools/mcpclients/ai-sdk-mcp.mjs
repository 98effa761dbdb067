// Vercel AI SDK: @ai-sdk/mcp createMCPClient over HTTP, defaults only (it
// probes with server/discover and speaks MCP 2026-07-28 with the gateway).
// The AI SDK runs a tool call with the tool's execute and gives the model
// toModelOutput of what it returns; a thrown error reaches the model as its
// message (generateText's tool-error part).
import { createMCPClient } from "@ai-sdk/mcp";
import { authHeaders, describe, plan, run, url } from "./harness.mjs";

await run(async () => {
  const client = await createMCPClient({ transport: { type: "http", url, headers: authHeaders } });
  try {
    const tools = await client.tools();
    const calls = [];
    for (const c of plan.calls) {
      const tool = tools[c.tool];
      const options = { toolCallId: c.id, messages: [] };
      try {
        const result = await tool.execute(c.arguments, options);
        const output = await tool.toModelOutput({ toolCallId: c.id, input: c.arguments, output: result });
        const modelText = output.type === "content"
          ? output.value.filter((p) => p.type === "text").map((p) => p.text).join("\n")
          : JSON.stringify(output.value);
        calls.push({ id: c.id, modelText, isError: result.isError === true, meta: result._meta ?? null });
      } catch (err) {
        calls.push({ id: c.id, modelText: describe(err).message, error: describe(err) });
      }
    }
    return { tools: Object.keys(tools), calls };
  } finally {
    await client.close();
  }
});

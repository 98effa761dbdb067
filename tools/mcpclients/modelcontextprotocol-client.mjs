// @modelcontextprotocol/client (v2) with versionNegotiation auto, which
// negotiates MCP 2026-07-28 with the gateway; otherwise defaults. An agent
// gives the model the result's text content.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { authHeaders, describe, plan, run, textOf, url } from "./harness.mjs";

await run(async () => {
  const client = new Client({ name: "flowdrop-ci", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: authHeaders } }));
  try {
    const { tools } = await client.listTools();
    const calls = [];
    for (const c of plan.calls) {
      try {
        const result = await client.callTool({ name: c.tool, arguments: c.arguments });
        calls.push({ id: c.id, modelText: textOf(result.content), isError: result.isError === true, meta: result._meta ?? null });
      } catch (err) {
        calls.push({ id: c.id, error: describe(err) });
      }
    }
    return { tools: tools.map((t) => t.name), calls };
  } finally {
    await client.close();
  }
});

// @modelcontextprotocol/sdk (v1): Client over StreamableHTTPClientTransport,
// defaults only. An agent gives the model the result's text content.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { authHeaders, describe, plan, run, textOf, url } from "./harness.mjs";

await run(async () => {
  const client = new Client({ name: "flowdrop-ci", version: "1.0.0" });
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

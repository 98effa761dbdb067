// @modelcontextprotocol/sdk (v1): Client over StreamableHTTPClientTransport,
// defaults only, driving what the gateway federates beyond tools from an
// upstream MCP server (server/mcp_federation_npm_e2e_test.go runs it).
//
//   node modelcontextprotocol-sdk-federation.mjs MCP_URL < plan.json   (FLOWDROP_API_KEY set)
//
// plan.json is {"read": [uri], "prompt": {name, arguments}, "complete":
// CompleteParams, "progress": {tool, arguments}}, each part optional. The
// script lists resources, templates and prompts, then does what the plan
// names, each part's failure reported in place, and prints
//   {"protocolVersions", "resources", "templates", "prompts", "reads":
//    [{uri, contents: [{uri, text}], error}], "prompt": {messages, meta,
//    error}, "completion": {values, error}, "call": {modelText, isError,
//    progress: [{progress, total, message}], error}}
// A failure to connect or list prints {"error"} with exit status 2.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { authHeaders, describe, plan, run, textOf, url } from "./harness.mjs";

// guard runs one part of the plan: its result, or its error in place.
async function guard(f) {
  try {
    return await f();
  } catch (err) {
    return { error: describe(err) };
  }
}

await run(async () => {
  const client = new Client({ name: "flowdrop-ci", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: authHeaders } }));
  try {
    // A caller whose view has no resources or prompts is not offered the
    // capability; the SDK then refuses the list itself, which reads as empty.
    const caps = client.getServerCapabilities() ?? {};
    const out = {
      capabilities: Object.keys(caps).sort(),
      resources: caps.resources ? (await client.listResources()).resources.map((r) => r.uri) : [],
      templates: caps.resources ? (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate) : [],
      prompts: caps.prompts ? (await client.listPrompts()).prompts.map((p) => p.name) : [],
      reads: [],
    };
    for (const uri of plan.read ?? []) {
      out.reads.push({ uri, ...(await guard(async () => {
        const r = await client.readResource({ uri });
        return { contents: r.contents.map((c) => ({ uri: c.uri, text: c.text ?? null })) };
      })) });
    }
    if (plan.prompt) {
      out.prompt = await guard(async () => {
        const r = await client.getPrompt(plan.prompt);
        return { messages: r.messages.map((m) => ({ role: m.role, text: m.content?.text ?? null })), meta: r._meta ?? null };
      });
    }
    if (plan.complete) {
      out.completion = await guard(async () => ({ values: (await client.complete(plan.complete)).completion.values }));
    }
    if (plan.progress) {
      // onprogress is how an agent on this SDK asks for progress: the SDK
      // sends a progressToken in the call's _meta and routes the
      // notifications/progress for that token here.
      const progress = [];
      out.call = await guard(async () => {
        const r = await client.callTool({ name: plan.progress.tool, arguments: plan.progress.arguments }, undefined, {
          onprogress: (p) => progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
        });
        return { modelText: textOf(r.content), isError: r.isError === true };
      });
      out.call.progress = progress;
    }
    return out;
  } finally {
    await client.close();
  }
});

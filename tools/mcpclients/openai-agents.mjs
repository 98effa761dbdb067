// OpenAI Agents JS: an Agent with the gateway as MCPServerStreamableHttp
// (which speaks MCP 2026-07-28 with it), defaults only, run by the SDK's own
// Runner. No model API is reachable here, so the model is a scripted one:
// each turn it asks for the plan's next tool call and records the
// function_call_result the Runner hands back — what a real model would read.
import { Agent, MCPServerStreamableHttp, Usage, run as runAgent, setTracingDisabled } from "@openai/agents";
import { authHeaders, plan, run, url } from "./harness.mjs";

// Tracing would export to OpenAI's API, which is neither reachable nor
// part of the MCP path.
setTracingDisabled(true);

// modelText is the text of a function_call_result's output: a string, one
// text item, or a list of input_text items.
function modelText(output) {
  if (typeof output === "string") return output;
  const items = Array.isArray(output) ? output : [output];
  return items.map((item) => item?.text ?? JSON.stringify(item)).join("\n");
}

await run(async () => {
  const server = new MCPServerStreamableHttp({ url, name: "flowdrop", requestInit: { headers: authHeaders } });
  await server.connect();
  try {
    let offered = null;
    const calls = [];
    const model = {
      async getResponse(request) {
        offered ??= request.tools.map((t) => t.name);
        const input = Array.isArray(request.input) ? request.input : [];
        const answered = input.filter((item) => item.type === "function_call_result");
        if (answered.length > calls.length) {
          const item = answered.at(-1);
          calls.push({ id: item.callId, modelText: modelText(item.output) });
        }
        const next = plan.calls[calls.length];
        const output = next
          ? [{ type: "function_call", callId: next.id, name: next.tool, arguments: JSON.stringify(next.arguments), status: "completed" }]
          : [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }];
        return { usage: new Usage(), output };
      },
      async *getStreamedResponse() {
        throw new Error("the scripted model does not stream");
      },
    };
    const agent = new Agent({ name: "notes", instructions: "Use the tools.", model, mcpServers: [server] });
    await runAgent(agent, "Make the notes.", { maxTurns: plan.calls.length + 2 });
    return { tools: offered, calls };
  } finally {
    await server.close();
  }
});

// LangChain.js: @langchain/mcp-adapters MultiServerMCPClient, defaults only,
// its tools run by LangGraph's ToolNode as a ReAct agent runs them. The
// adapters validate arguments against the tool's (simplified) schema before
// calling; ToolNode turns any tool error into the ToolMessage the model
// reads. The repairs are in the message's mcp_meta artifact.
import { AIMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { authHeaders, plan, run, url } from "./harness.mjs";

await run(async () => {
  const client = new MultiServerMCPClient({ mcpServers: { flowdrop: { url, headers: authHeaders } } });
  try {
    const tools = await client.getTools();
    const node = new ToolNode(tools);
    const calls = [];
    for (const c of plan.calls) {
      const message = new AIMessage({ content: "", tool_calls: [{ id: c.id, name: c.tool, args: c.arguments, type: "tool_call" }] });
      const { messages: [reply] } = await node.invoke({ messages: [message] });
      const content = typeof reply.content === "string" ? reply.content : JSON.stringify(reply.content);
      let modelText = content;
      try {
        // A text block with structuredContent or _meta arrives as one JSON block.
        const block = JSON.parse(content);
        if (typeof block?.text === "string") modelText = block.text;
      } catch {}
      const meta = (reply.artifact ?? []).find((a) => a.type === "mcp_meta")?.data ?? null;
      calls.push({ id: c.id, modelText, isError: reply.status === "error", meta });
    }
    return { tools: tools.map((t) => t.name), calls };
  } finally {
    await client.close();
  }
});

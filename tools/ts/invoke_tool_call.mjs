// Invokes a gateway tool from a model's tool call, with the generated client
// (gen/ts) over gRPC (HTTP/2). The README's TypeScript example is this file.
//
//   node invoke_tool_call.mjs GATEWAY_URL < chat_completion.json
//
// stdin is an OpenAI chat completion; its choices[0].message.tool_calls[0]
// is sent as InvokeTool with the function's arguments string, unparsed, as
// argumentsJson (the gateway parses it strictly, so a 64-bit id is not
// rounded on the way). Prints the InvokeToolResponse as proto JSON, or
// {"error":{"code","message"}} with exit status 2 when the gateway refuses.
import { readFileSync } from "node:fs";
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  InvokeToolResponseSchema,
  ToolGatewayService,
} from "./gen/flowdrop/gateway/v1/gateway_pb.js";

const [gatewayURL] = process.argv.slice(2);
const completion = JSON.parse(readFileSync(0, "utf8"));
const toolCall = completion.choices[0].message.tool_calls[0];

// Plaintext h2c here; use an https:// URL for a gateway with TLS.
const transport = createGrpcTransport({ baseUrl: gatewayURL });
const gateway = createClient(ToolGatewayService, transport);

try {
  const response = await gateway.invokeTool({
    tool: toolCall.function.name,
    argumentsJson: toolCall.function.arguments,
    callId: toolCall.id,
  });
  console.log(toJsonString(InvokeToolResponseSchema, response));
} catch (err) {
  const e = ConnectError.from(err);
  console.log(JSON.stringify({ error: { code: Code[e.code], message: e.rawMessage } }));
  process.exitCode = 2;
}

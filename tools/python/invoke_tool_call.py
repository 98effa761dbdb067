"""Invokes a gateway tool from a model's tool call, with the generated client
(gen/python) over gRPC. The README's Python example is this file.

    PYTHONPATH=gen/python python3 invoke_tool_call.py HOST:PORT < chat_completion.json

stdin is an OpenAI chat completion; its choices[0].message.tool_calls[0] is
sent as InvokeTool with the function's arguments string, unparsed, as
arguments_json (the gateway parses it strictly, so a 64-bit id is not rounded
on the way). Prints the InvokeToolResponse as proto JSON, or
{"error":{"code","message","details"}} with exit status 2 when the gateway
refuses: details are the status's google.rpc details (ErrorInfo, BadRequest,
RetryInfo, the repairs), decoded with the modules gen/python ships.
"""

import json
import sys

import grpc
from google.protobuf import json_format

from flowdrop.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from google.rpc import error_details_pb2, status_pb2  # noqa: F401 (registers the detail types)


def status_details(err: grpc.RpcError) -> list:
    """The google.rpc.Status details the gateway sent with err, as JSON."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            return json_format.MessageToDict(status).get("details", [])
    return []


def main() -> int:
    target = sys.argv[1]
    completion = json.load(sys.stdin)
    tool_call = completion["choices"][0]["message"]["tool_calls"][0]
    # Plaintext here; grpc.secure_channel(target, grpc.ssl_channel_credentials()) with TLS.
    with grpc.insecure_channel(target) as channel:
        gateway = gateway_pb2_grpc.ToolGatewayServiceStub(channel)
        try:
            response = gateway.InvokeTool(
                gateway_pb2.InvokeToolRequest(
                    tool=tool_call["function"]["name"],
                    arguments_json=tool_call["function"]["arguments"],
                    call_id=tool_call["id"],
                ),
                timeout=10,
            )
        except grpc.RpcError as err:
            code = "".join(word.capitalize() for word in err.code().name.split("_"))
            error = {"code": code, "message": err.details(), "details": status_details(err)}
            print(json.dumps({"error": error}))
            return 2
    print(json_format.MessageToJson(response))
    return 0


if __name__ == "__main__":
    sys.exit(main())

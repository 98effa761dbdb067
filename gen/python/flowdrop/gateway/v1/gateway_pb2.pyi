from flowdrop.gateway.v1 import content_pb2 as _content_pb2
from flowdrop.gateway.v1 import tool_pb2 as _tool_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InvokeToolRequest(_message.Message):
    __slots__ = ["arguments", "arguments_json", "call_id", "idempotency_key", "tool"]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments: _struct_pb2.Struct
    arguments_json: str
    call_id: str
    idempotency_key: str
    tool: str
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., call_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class InvokeToolResponse(_message.Message):
    __slots__ = ["content", "is_error", "meta", "repairs", "replayed", "result"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[_content_pb2.ContentBlock]
    is_error: bool
    meta: _struct_pb2.Struct
    repairs: _containers.RepeatedCompositeFieldContainer[_tool_pb2.Repair]
    replayed: bool
    result: _struct_pb2.Value
    def __init__(self, result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., is_error: bool = ..., repairs: _Optional[_Iterable[_Union[_tool_pb2.Repair, _Mapping]]] = ..., replayed: bool = ..., content: _Optional[_Iterable[_Union[_content_pb2.ContentBlock, _Mapping]]] = ..., meta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class InvokeToolStreamResponse(_message.Message):
    __slots__ = ["progress", "result"]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    progress: ToolProgress
    result: InvokeToolResponse
    def __init__(self, progress: _Optional[_Union[ToolProgress, _Mapping]] = ..., result: _Optional[_Union[InvokeToolResponse, _Mapping]] = ...) -> None: ...

class ToolProgress(_message.Message):
    __slots__ = ["message", "progress", "total"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    message: str
    progress: float
    total: float
    def __init__(self, progress: _Optional[float] = ..., total: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

from flowdrop.gateway.v1 import content_pb2 as _content_pb2
from flowdrop.gateway.v1 import tool_pb2 as _tool_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InvokeRequest(_message.Message):
    __slots__ = ["arguments", "call_id", "caller", "tool"]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments: _struct_pb2.Struct
    call_id: str
    caller: _tool_pb2.Caller
    tool: str
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., call_id: _Optional[str] = ..., caller: _Optional[_Union[_tool_pb2.Caller, _Mapping]] = ...) -> None: ...

class InvokeResponse(_message.Message):
    __slots__ = ["content", "is_error", "meta", "result"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[_content_pb2.ContentBlock]
    is_error: bool
    meta: _struct_pb2.Struct
    result: _struct_pb2.Value
    def __init__(self, result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., is_error: bool = ..., content: _Optional[_Iterable[_Union[_content_pb2.ContentBlock, _Mapping]]] = ..., meta: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

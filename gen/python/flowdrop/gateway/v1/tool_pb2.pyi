from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
HTTP_PARAMETER_IN_BODY: HttpParameterIn
HTTP_PARAMETER_IN_HEADER: HttpParameterIn
HTTP_PARAMETER_IN_PATH: HttpParameterIn
HTTP_PARAMETER_IN_QUERY: HttpParameterIn
HTTP_PARAMETER_IN_UNSPECIFIED: HttpParameterIn
MCP_TRANSPORT_SSE: McpTransport
MCP_TRANSPORT_STREAMABLE_HTTP: McpTransport
MCP_TRANSPORT_UNSPECIFIED: McpTransport
REPAIR_KIND_ENTITIES_DECODED: RepairKind
REPAIR_KIND_JSON_DECODED: RepairKind
REPAIR_KIND_NULL_DROPPED: RepairKind
REPAIR_KIND_UNSPECIFIED: RepairKind

class BackendSpec(_message.Message):
    __slots__ = ["alias", "grpc_method", "http_operation", "mcp_tool", "tls"]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    GRPC_METHOD_FIELD_NUMBER: _ClassVar[int]
    HTTP_OPERATION_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOL_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    alias: ToolAlias
    grpc_method: GrpcMethod
    http_operation: HttpOperation
    mcp_tool: McpTool
    tls: TransportSecurity
    def __init__(self, grpc_method: _Optional[_Union[GrpcMethod, _Mapping]] = ..., http_operation: _Optional[_Union[HttpOperation, _Mapping]] = ..., mcp_tool: _Optional[_Union[McpTool, _Mapping]] = ..., alias: _Optional[_Union[ToolAlias, _Mapping]] = ..., tls: _Optional[_Union[TransportSecurity, _Mapping]] = ...) -> None: ...

class Caller(_message.Message):
    __slots__ = ["method", "roles", "subject"]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    method: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    subject: str
    def __init__(self, subject: _Optional[str] = ..., method: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class GrpcMethod(_message.Message):
    __slots__ = ["descriptors", "method", "target"]
    DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    descriptors: bytes
    method: str
    target: str
    def __init__(self, target: _Optional[str] = ..., method: _Optional[str] = ..., descriptors: _Optional[bytes] = ...) -> None: ...

class HttpOperation(_message.Message):
    __slots__ = ["base_url", "body_argument", "method", "parameters", "path", "response_schema"]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    BODY_ARGUMENT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    base_url: str
    body_argument: str
    method: str
    parameters: _containers.RepeatedCompositeFieldContainer[HttpParameter]
    path: str
    response_schema: _struct_pb2.Struct
    def __init__(self, base_url: _Optional[str] = ..., method: _Optional[str] = ..., path: _Optional[str] = ..., parameters: _Optional[_Iterable[_Union[HttpParameter, _Mapping]]] = ..., body_argument: _Optional[str] = ..., response_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class HttpParameter(_message.Message):
    __slots__ = ["name"]
    IN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ..., **kwargs) -> None: ...

class McpTool(_message.Message):
    __slots__ = ["credential_env", "credential_file", "tool", "transport", "url"]
    CREDENTIAL_ENV_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FILE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    credential_env: str
    credential_file: str
    tool: str
    transport: McpTransport
    url: str
    def __init__(self, url: _Optional[str] = ..., tool: _Optional[str] = ..., credential_env: _Optional[str] = ..., credential_file: _Optional[str] = ..., transport: _Optional[_Union[McpTransport, str]] = ...) -> None: ...

class Repair(_message.Message):
    __slots__ = ["bound_hit", "kind", "passes", "path"]
    BOUND_HIT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    bound_hit: bool
    kind: RepairKind
    passes: int
    path: str
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[_Union[RepairKind, str]] = ..., passes: _Optional[int] = ..., bound_hit: bool = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ["annotations", "backend", "description", "input_schema", "labels", "max_result_bytes", "name", "on_invalid_output", "origin", "output_schema", "revision", "spec", "timeout"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ON_INVALID_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    annotations: ToolAnnotations
    backend: str
    description: str
    input_schema: _struct_pb2.Struct
    labels: _containers.ScalarMap[str, str]
    max_result_bytes: int
    name: str
    on_invalid_output: str
    origin: ToolOrigin
    output_schema: _struct_pb2.Struct
    revision: int
    spec: BackendSpec
    timeout: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., backend: _Optional[str] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., revision: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., spec: _Optional[_Union[BackendSpec, _Mapping]] = ..., annotations: _Optional[_Union[ToolAnnotations, _Mapping]] = ..., max_result_bytes: _Optional[int] = ..., output_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., on_invalid_output: _Optional[str] = ..., origin: _Optional[_Union[ToolOrigin, _Mapping]] = ...) -> None: ...

class ToolAlias(_message.Message):
    __slots__ = ["fixed_arguments", "injected_arguments", "target"]
    class InjectedArgumentsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIXED_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    INJECTED_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    fixed_arguments: _struct_pb2.Struct
    injected_arguments: _containers.ScalarMap[str, str]
    target: str
    def __init__(self, target: _Optional[str] = ..., fixed_arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., injected_arguments: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ToolAnnotations(_message.Message):
    __slots__ = ["destructive_hint", "idempotent_hint", "open_world_hint", "read_only_hint"]
    DESTRUCTIVE_HINT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_HINT_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_HINT_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_HINT_FIELD_NUMBER: _ClassVar[int]
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool
    read_only_hint: bool
    def __init__(self, read_only_hint: bool = ..., destructive_hint: bool = ..., idempotent_hint: bool = ..., open_world_hint: bool = ...) -> None: ...

class ToolOrigin(_message.Message):
    __slots__ = ["edited", "mcp_upstream", "pending", "upstream_digest"]
    EDITED_FIELD_NUMBER: _ClassVar[int]
    MCP_UPSTREAM_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_DIGEST_FIELD_NUMBER: _ClassVar[int]
    edited: bool
    mcp_upstream: str
    pending: _containers.RepeatedScalarFieldContainer[str]
    upstream_digest: str
    def __init__(self, mcp_upstream: _Optional[str] = ..., upstream_digest: _Optional[str] = ..., edited: bool = ..., pending: _Optional[_Iterable[str]] = ...) -> None: ...

class TransportSecurity(_message.Message):
    __slots__ = ["ca_file", "cert_file", "key_file", "require", "server_name"]
    CA_FILE_FIELD_NUMBER: _ClassVar[int]
    CERT_FILE_FIELD_NUMBER: _ClassVar[int]
    KEY_FILE_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    ca_file: str
    cert_file: str
    key_file: str
    require: bool
    server_name: str
    def __init__(self, ca_file: _Optional[str] = ..., cert_file: _Optional[str] = ..., key_file: _Optional[str] = ..., server_name: _Optional[str] = ..., require: bool = ...) -> None: ...

class HttpParameterIn(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class McpTransport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RepairKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

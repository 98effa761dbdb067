from flowdrop.gateway.v1 import repair_stats_pb2 as _repair_stats_pb2
from flowdrop.gateway.v1 import search_pb2 as _search_pb2
from flowdrop.gateway.v1 import tool_pb2 as _tool_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovePendingChangeRequest(_message.Message):
    __slots__ = ["expected_revision", "name"]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expected_revision: int
    name: str
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class ApprovePendingChangeResponse(_message.Message):
    __slots__ = ["compatibility_notes", "deleted", "lint_findings", "tool"]
    COMPATIBILITY_NOTES_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    LINT_FINDINGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    compatibility_notes: _containers.RepeatedCompositeFieldContainer[CompatibilityNote]
    deleted: bool
    lint_findings: _containers.RepeatedCompositeFieldContainer[LintFinding]
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., deleted: bool = ..., compatibility_notes: _Optional[_Iterable[_Union[CompatibilityNote, _Mapping]]] = ..., lint_findings: _Optional[_Iterable[_Union[LintFinding, _Mapping]]] = ...) -> None: ...

class Bundle(_message.Message):
    __slots__ = ["description", "discovery", "globs", "label_selectors", "name", "revision", "tools"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    GLOBS_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    description: str
    discovery: str
    globs: _containers.RepeatedScalarFieldContainer[str]
    label_selectors: _containers.RepeatedScalarFieldContainer[str]
    name: str
    revision: int
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., globs: _Optional[_Iterable[str]] = ..., label_selectors: _Optional[_Iterable[str]] = ..., discovery: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class CompatibilityNote(_message.Message):
    __slots__ = ["kind", "message", "path"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    kind: str
    message: str
    path: str
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteBundleRequest(_message.Message):
    __slots__ = ["expected_revision", "name"]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expected_revision: int
    name: str
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class DeleteBundleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteToolRequest(_message.Message):
    __slots__ = ["expected_revision", "name"]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expected_revision: int
    name: str
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class DeleteToolResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ExportToolsRequest(_message.Message):
    __slots__ = ["bundle", "format", "page_size", "page_token"]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bundle: str
    format: str
    page_size: int
    page_token: str
    def __init__(self, format: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., bundle: _Optional[str] = ...) -> None: ...

class ExportToolsResponse(_message.Message):
    __slots__ = ["left_out", "next_page_token", "optional_nulls_refused", "tools_json"]
    LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_NULLS_REFUSED_FIELD_NUMBER: _ClassVar[int]
    TOOLS_JSON_FIELD_NUMBER: _ClassVar[int]
    left_out: _containers.RepeatedCompositeFieldContainer[LeftOutTool]
    next_page_token: str
    optional_nulls_refused: _containers.RepeatedScalarFieldContainer[str]
    tools_json: str
    def __init__(self, tools_json: _Optional[str] = ..., left_out: _Optional[_Iterable[_Union[LeftOutTool, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., optional_nulls_refused: _Optional[_Iterable[str]] = ...) -> None: ...

class GetBundleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetBundleResponse(_message.Message):
    __slots__ = ["bundle"]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ...) -> None: ...

class GetPendingChangeRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetPendingChangeResponse(_message.Message):
    __slots__ = ["change"]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    change: PendingChange
    def __init__(self, change: _Optional[_Union[PendingChange, _Mapping]] = ...) -> None: ...

class GetToolHistoryRequest(_message.Message):
    __slots__ = ["limit", "name"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    limit: int
    name: str
    def __init__(self, name: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class GetToolHistoryResponse(_message.Message):
    __slots__ = ["revisions"]
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    revisions: _containers.RepeatedCompositeFieldContainer[ToolRevision]
    def __init__(self, revisions: _Optional[_Iterable[_Union[ToolRevision, _Mapping]]] = ...) -> None: ...

class GetToolRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetToolResponse(_message.Message):
    __slots__ = ["tool"]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ...) -> None: ...

class LeftOutTool(_message.Message):
    __slots__ = ["findings", "name"]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    findings: _containers.RepeatedCompositeFieldContainer[LintFinding]
    name: str
    def __init__(self, name: _Optional[str] = ..., findings: _Optional[_Iterable[_Union[LintFinding, _Mapping]]] = ...) -> None: ...

class LintFinding(_message.Message):
    __slots__ = ["message", "path", "profile", "severity"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    message: str
    path: str
    profile: str
    severity: str
    def __init__(self, profile: _Optional[str] = ..., path: _Optional[str] = ..., message: _Optional[str] = ..., severity: _Optional[str] = ...) -> None: ...

class ListBundlesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListBundlesResponse(_message.Message):
    __slots__ = ["bundles"]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    bundles: _containers.RepeatedCompositeFieldContainer[Bundle]
    def __init__(self, bundles: _Optional[_Iterable[_Union[Bundle, _Mapping]]] = ...) -> None: ...

class ListPendingChangesRequest(_message.Message):
    __slots__ = ["name_prefix", "page_size", "page_token"]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name_prefix: str
    page_size: int
    page_token: str
    def __init__(self, name_prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListPendingChangesResponse(_message.Message):
    __slots__ = ["changes", "next_page_token"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[PendingChange]
    next_page_token: str
    def __init__(self, changes: _Optional[_Iterable[_Union[PendingChange, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ["bundle", "labels", "name_prefix", "page_size", "page_token"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bundle: str
    labels: _containers.ScalarMap[str, str]
    name_prefix: str
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., name_prefix: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., bundle: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ["next_page_token", "tools"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    tools: _containers.RepeatedCompositeFieldContainer[_tool_pb2.Tool]
    def __init__(self, tools: _Optional[_Iterable[_Union[_tool_pb2.Tool, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListUserTokensRequest(_message.Message):
    __slots__ = ["client", "subject"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    client: str
    subject: str
    def __init__(self, subject: _Optional[str] = ..., client: _Optional[str] = ...) -> None: ...

class ListUserTokensResponse(_message.Message):
    __slots__ = ["tokens", "truncated"]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[UserToken]
    truncated: bool
    def __init__(self, tokens: _Optional[_Iterable[_Union[UserToken, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class PendingChange(_message.Message):
    __slots__ = ["compatibility_notes", "detected_at", "held_because", "kinds", "proposed", "tool"]
    COMPATIBILITY_NOTES_FIELD_NUMBER: _ClassVar[int]
    DETECTED_AT_FIELD_NUMBER: _ClassVar[int]
    HELD_BECAUSE_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    compatibility_notes: _containers.RepeatedCompositeFieldContainer[CompatibilityNote]
    detected_at: _timestamp_pb2.Timestamp
    held_because: str
    kinds: _containers.RepeatedScalarFieldContainer[str]
    proposed: _tool_pb2.Tool
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., kinds: _Optional[_Iterable[str]] = ..., proposed: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., compatibility_notes: _Optional[_Iterable[_Union[CompatibilityNote, _Mapping]]] = ..., detected_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., held_because: _Optional[str] = ...) -> None: ...

class PutBundleRequest(_message.Message):
    __slots__ = ["bundle", "expected_revision"]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    expected_revision: int
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class PutBundleResponse(_message.Message):
    __slots__ = ["bundle", "created"]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    created: bool
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ..., created: bool = ...) -> None: ...

class RegisterToolRequest(_message.Message):
    __slots__ = ["expected_revision", "require_compatible", "strict_lint", "tool"]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_COMPATIBLE_FIELD_NUMBER: _ClassVar[int]
    STRICT_LINT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    expected_revision: int
    require_compatible: bool
    strict_lint: bool
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., expected_revision: _Optional[int] = ..., require_compatible: bool = ..., strict_lint: bool = ...) -> None: ...

class RegisterToolResponse(_message.Message):
    __slots__ = ["compatibility_notes", "created", "lint_findings", "tool"]
    COMPATIBILITY_NOTES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    LINT_FINDINGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    compatibility_notes: _containers.RepeatedCompositeFieldContainer[CompatibilityNote]
    created: bool
    lint_findings: _containers.RepeatedCompositeFieldContainer[LintFinding]
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., created: bool = ..., compatibility_notes: _Optional[_Iterable[_Union[CompatibilityNote, _Mapping]]] = ..., lint_findings: _Optional[_Iterable[_Union[LintFinding, _Mapping]]] = ...) -> None: ...

class RejectPendingChangeRequest(_message.Message):
    __slots__ = ["expected_revision", "name"]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expected_revision: int
    name: str
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class RejectPendingChangeResponse(_message.Message):
    __slots__ = ["tool"]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: _tool_pb2.Tool
    def __init__(self, tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ...) -> None: ...

class RevokeUserTokensRequest(_message.Message):
    __slots__ = ["client", "subject"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    client: str
    subject: str
    def __init__(self, subject: _Optional[str] = ..., client: _Optional[str] = ...) -> None: ...

class RevokeUserTokensResponse(_message.Message):
    __slots__ = ["revoked"]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    revoked: int
    def __init__(self, revoked: _Optional[int] = ...) -> None: ...

class ToolRevision(_message.Message):
    __slots__ = ["revision", "time", "tool", "writer"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    WRITER_FIELD_NUMBER: _ClassVar[int]
    revision: int
    time: _timestamp_pb2.Timestamp
    tool: _tool_pb2.Tool
    writer: str
    def __init__(self, revision: _Optional[int] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., writer: _Optional[str] = ..., tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ...) -> None: ...

class UserToken(_message.Message):
    __slots__ = ["client", "subject"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    client: str
    subject: str
    def __init__(self, subject: _Optional[str] = ..., client: _Optional[str] = ...) -> None: ...

class WatchToolsRequest(_message.Message):
    __slots__ = ["start_revision"]
    START_REVISION_FIELD_NUMBER: _ClassVar[int]
    start_revision: int
    def __init__(self, start_revision: _Optional[int] = ...) -> None: ...

class WatchToolsResponse(_message.Message):
    __slots__ = ["revision", "tool", "type"]
    class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    EVENT_TYPE_DELETE: WatchToolsResponse.EventType
    EVENT_TYPE_PUT: WatchToolsResponse.EventType
    EVENT_TYPE_UNSPECIFIED: WatchToolsResponse.EventType
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    revision: int
    tool: _tool_pb2.Tool
    type: WatchToolsResponse.EventType
    def __init__(self, type: _Optional[_Union[WatchToolsResponse.EventType, str]] = ..., tool: _Optional[_Union[_tool_pb2.Tool, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

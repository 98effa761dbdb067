from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetRepairStatsRequest(_message.Message):
    __slots__ = ["tool"]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    def __init__(self, tool: _Optional[str] = ...) -> None: ...

class GetRepairStatsResponse(_message.Message):
    __slots__ = ["limits", "overflow", "since", "thresholds", "tools"]
    class OverflowEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLDS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    limits: RepairStatsLimits
    overflow: _containers.ScalarMap[str, int]
    since: _timestamp_pb2.Timestamp
    thresholds: RepairStatsThresholds
    tools: _containers.RepeatedCompositeFieldContainer[ToolRepairStats]
    def __init__(self, since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[ToolRepairStats, _Mapping]]] = ..., overflow: _Optional[_Mapping[str, int]] = ..., limits: _Optional[_Union[RepairStatsLimits, _Mapping]] = ..., thresholds: _Optional[_Union[RepairStatsThresholds, _Mapping]] = ...) -> None: ...

class RepairStatsLimits(_message.Message):
    __slots__ = ["max_callers", "max_clients", "max_fields_per_tool", "max_rows", "max_tools"]
    MAX_CALLERS_FIELD_NUMBER: _ClassVar[int]
    MAX_CLIENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELDS_PER_TOOL_FIELD_NUMBER: _ClassVar[int]
    MAX_ROWS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOLS_FIELD_NUMBER: _ClassVar[int]
    max_callers: int
    max_clients: int
    max_fields_per_tool: int
    max_rows: int
    max_tools: int
    def __init__(self, max_tools: _Optional[int] = ..., max_fields_per_tool: _Optional[int] = ..., max_callers: _Optional[int] = ..., max_clients: _Optional[int] = ..., max_rows: _Optional[int] = ...) -> None: ...

class RepairStatsRow(_message.Message):
    __slots__ = ["caller", "calls", "client", "event", "event_kind", "field"]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_KIND_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    caller: str
    calls: int
    client: str
    event: str
    event_kind: str
    field: str
    def __init__(self, field: _Optional[str] = ..., caller: _Optional[str] = ..., client: _Optional[str] = ..., event_kind: _Optional[str] = ..., event: _Optional[str] = ..., calls: _Optional[int] = ...) -> None: ...

class RepairStatsThresholds(_message.Message):
    __slots__ = ["client_share", "keyword_share", "min_calls", "min_failures", "repair_share"]
    CLIENT_SHARE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_SHARE_FIELD_NUMBER: _ClassVar[int]
    MIN_CALLS_FIELD_NUMBER: _ClassVar[int]
    MIN_FAILURES_FIELD_NUMBER: _ClassVar[int]
    REPAIR_SHARE_FIELD_NUMBER: _ClassVar[int]
    client_share: float
    keyword_share: float
    min_calls: int
    min_failures: int
    repair_share: float
    def __init__(self, min_calls: _Optional[int] = ..., repair_share: _Optional[float] = ..., min_failures: _Optional[int] = ..., keyword_share: _Optional[float] = ..., client_share: _Optional[float] = ...) -> None: ...

class SchemaSuggestion(_message.Message):
    __slots__ = ["calls", "change", "client", "event", "event_kind", "field", "of_calls", "text"]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_KIND_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    OF_CALLS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    calls: int
    change: str
    client: str
    event: str
    event_kind: str
    field: str
    of_calls: int
    text: str
    def __init__(self, change: _Optional[str] = ..., field: _Optional[str] = ..., event_kind: _Optional[str] = ..., event: _Optional[str] = ..., calls: _Optional[int] = ..., of_calls: _Optional[int] = ..., client: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ToolRepairStats(_message.Message):
    __slots__ = ["calls", "failed_calls", "rows", "since", "suggestions", "tool"]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    FAILED_CALLS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    SUGGESTIONS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    calls: int
    failed_calls: int
    rows: _containers.RepeatedCompositeFieldContainer[RepairStatsRow]
    since: _timestamp_pb2.Timestamp
    suggestions: _containers.RepeatedCompositeFieldContainer[SchemaSuggestion]
    tool: str
    def __init__(self, tool: _Optional[str] = ..., calls: _Optional[int] = ..., failed_calls: _Optional[int] = ..., rows: _Optional[_Iterable[_Union[RepairStatsRow, _Mapping]]] = ..., suggestions: _Optional[_Iterable[_Union[SchemaSuggestion, _Mapping]]] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchToolsHit(_message.Message):
    __slots__ = ["description", "name", "score"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    description: str
    name: str
    score: float
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class SearchToolsRequest(_message.Message):
    __slots__ = ["limit", "query"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    limit: int
    query: str
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class SearchToolsResponse(_message.Message):
    __slots__ = ["hits"]
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchToolsHit]
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchToolsHit, _Mapping]]] = ...) -> None: ...

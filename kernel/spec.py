"""What a field says beyond its type (:class:`Spec`), and the ids, times and kinds records share.

A leaf that the records (:mod:`kernel.records`) and the operations' input records
(:mod:`kernel.inputs`) both read: a command made from an operation needs the inputs' limits, not
the records, so a shell's Tab press loads this and not the records' dozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

EvidenceKind = Literal["note", "conversation", "log", "doc", "code", "other"]
EVIDENCE_KINDS: tuple[EvidenceKind, ...] = get_args(EvidenceKind)


@dataclass(frozen=True)
class Spec:
    """What a field's JSON Schema says beyond its type: a pattern, bounds, lengths, a description.

    Pydantic calls the two hooks when ``kernel/contracts.py`` generates ``schemas/``; nothing reads
    them at run time, so records stay free of pydantic.
    """

    pattern: str | None = None
    ge: int | None = None
    le: int | None = None
    # Characters of a string, items of a list.
    min_length: int | None = None
    max_length: int | None = None
    # A float that must be a number (no NaN or infinity).
    finite: bool = False
    description: str | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """The core schema of the annotated type, with these constraints."""
        schema = handler(source)
        for key in ("pattern", "ge", "le", "min_length", "max_length"):
            if getattr(self, key) is not None:
                schema[key] = getattr(self, key)
        if self.finite:
            schema["allow_inf_nan"] = False
        return schema

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        """The JSON Schema of the annotated type, with this description."""
        document = handler(core_schema)
        if self.description is not None:
            document["description"] = self.description
        return document


_ULID = "[0-9A-HJKMNP-TV-Z]{26}"
EvidenceId = Annotated[str, Spec(pattern=rf"^ev_{_ULID}$")]
DecisionId = Annotated[str, Spec(pattern=rf"^dc_{_ULID}$")]
ProposalId = Annotated[str, Spec(pattern=rf"^pr_{_ULID}$")]
Timestamp = Annotated[str, Spec(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")]
Sha256 = Annotated[str, Spec(pattern=r"^[0-9a-f]{64}$")]

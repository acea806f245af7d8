"""Records and the backend handle shared by the contract tests."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctx_kernel.kernel import clock, ids
from ctx_kernel.kernel.records import Decision, Evidence, Proposal
from ctx_kernel.kernel.store.base import Store


@dataclass
class Backend:
    """A store under test with the hooks the contract needs beyond the interface."""

    name: str
    store: Store
    # Run one hand-written statement (``?`` placeholders) in its own transaction, bypassing the
    # interface: the database itself must refuse what breaks an invariant.
    raw_execute: Callable[[str, tuple[Any, ...]], None]
    # Another connection to the same store, as a second process would open it.
    second_connection: Callable[[], Store]
    opened: list[Store] = field(default_factory=list)


def evidence(text: str, *, session: str | None = None, at: str | None = None) -> Evidence:
    """An evidence record as the kernel would log it."""
    return Evidence(
        ids.new_id("ev"),
        text,
        "note",
        "agent",
        session,
        [],
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
        at or clock.now(),
    )


def decision(subject: str, text: str, *, valid_from: str = "2026-01-01T00:00:00.000000Z") -> Decision:
    """An open decision on ``subject``."""
    return Decision(
        ids.new_id("dc"),
        subject,
        text,
        None,
        valid_from,
        None,
        "reviewer",
        valid_from,
        None,
        False,
        None,
        None,
    )


def proposal(subject: str, text: str, cites: list[str] | None = None) -> Proposal:
    """A pending proposal."""
    return Proposal(
        ids.new_id("pr"),
        subject,
        text,
        None,
        "agent",
        None,
        clock.now(),
        "pending",
        [],
        [],
        None,
        None,
        None,
        None,
        None,
        None,
        evidence=cites or [],
    )

"""Errors ctx reports to people; hosts print them as one line, a notification or a tool error."""

from __future__ import annotations


class CtxError(Exception):
    """Root of every error whose message is meant for a person."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(CtxError):
    """The input is malformed: a bad id, an empty field, text over a limit, invalid JSON."""

    exit_code = 2


class NotFoundError(UsageError):
    """An id or subject that is well-formed but names nothing in the store."""


class RefusedError(CtxError):
    """A well-formed request the kernel will not carry out, such as ratifying a non-pending proposal."""

    exit_code = 1


class StoreError(CtxError):
    """The store is missing, from a newer version, locked or damaged."""

    exit_code = 1


class StalePlanError(RefusedError):
    """A person approved a change the store no longer matches (another reviewer acted first)."""

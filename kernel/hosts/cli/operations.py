"""The CLI commands made from the operations' declarations (``kernel/hosts/operations.py``).

:func:`operation_command` reads an operation's input record and makes its arguments and options:
a field named in ``positional`` is an argument; every other field an option ``--field-name`` (or
the field's ``flag``) with the field's description as help, its default, and its limits as click
types (``Spec(ge, le)`` an integer range, a ``Literal`` a choice, ``bool`` a flag, a list a
repeated option). ``--json`` prints the operation's JSON answer; otherwise the command's ``render``
prints it for a person. Text arguments are checked to be UTF-8, each named in the message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, fields
from functools import cache
from types import NoneType, UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import click

from ctx_kernel.kernel.hosts.cli.base import (
    _check_utf8,
    _complete_pending,
    _complete_subject,
    _emit_json,
    _say,
    _with_store,
    cli,
)
from ctx_kernel.kernel.hosts.operations import OPERATIONS, Caller
from ctx_kernel.kernel.spec import Spec

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
# A person at a terminal: the name the read operations never use (the CLI's writes are its own).
TERMINAL = Caller("cli", None)
# Arguments that complete from the store in a shell.
COMPLETIONS = {"subject": _complete_subject, "id": _complete_pending}


def _shape(hint: Any) -> tuple[Any, Spec | None]:
    """A field's type without ``None`` and ``Annotated``, and its :class:`Spec` if it has one."""
    spec = None
    if get_origin(hint) is Annotated:
        spec = next((m for m in hint.__metadata__ if isinstance(m, Spec)), None)
        hint = get_args(hint)[0]
    if get_origin(hint) in (Union, UnionType):
        kept = [arg for arg in get_args(hint) if arg is not NoneType]
        if len(kept) == 1:
            inner, inner_spec = _shape(kept[0])
            return inner, spec or inner_spec
    return hint, spec


def _click_type(hint: Any, spec: Spec | None) -> Any:
    if get_origin(hint) is Literal:
        return click.Choice([str(choice) for choice in get_args(hint)])
    if hint is int and spec is not None and (spec.ge is not None or spec.le is not None):
        return click.IntRange(spec.ge, spec.le)
    return None


def _parameter(item: Field[Any], hint: Any, positional: bool) -> Decorator:
    """The click argument or option of one field."""
    meta = item.metadata
    kind, spec = _shape(hint)
    if positional:
        return click.argument(
            item.name, metavar=meta.get("metavar"), shell_complete=COMPLETIONS.get(item.name)
        )
    names = [meta.get("flag") or "--" + item.name.replace("_", "-")]
    if meta.get("short"):
        names.append(meta["short"])
    settings: dict[str, Any] = {"help": meta.get("description"), "metavar": meta.get("metavar")}
    if kind is bool:
        settings["is_flag"] = True
    elif get_origin(kind) is list:
        settings["multiple"] = True
        settings["type"] = _click_type(*_shape(get_args(kind)[0]))
    else:
        settings["type"] = _click_type(kind, spec)
        if item.default not in (MISSING, None):
            settings.update(default=item.default, show_default=True)
        elif item.default is MISSING:
            settings["required"] = True
    return click.option(*names, item.name, **settings)


def _checked(name: str, value: Any) -> Any:
    """``value`` with each text in it checked to be UTF-8 (an argument from a shell may not be)."""
    if isinstance(value, str):
        return _check_utf8(value, name)
    if isinstance(value, tuple):
        return [_checked(name, item) for item in value]
    return value


def operation_command(
    name: str,
    render: Callable[..., None],
    *,
    extra: Sequence[Decorator] = (),
    note: Callable[[Any], str | None] | None = None,
    served: Callable[..., str | None] | None = None,
) -> click.Command:
    """Add the operation ``name`` to the CLI, made from its declaration.

    ``render(ctx, args, result, **values)`` prints the answer for a person; ``values`` are the
    ``extra`` options that are not fields of the input record (an extra option named like a field
    gives that field its value, as ``--min`` gives ``min_scores``). ``note(result)`` is a line
    for stderr, printed before either answer.
    """
    operation = OPERATIONS[name]
    record = operation.arguments
    hints = get_type_hints(record, include_extras=True)
    field_names = {item.name for item in fields(record)}

    def run(ctx: Ctx, *, as_json: bool, **values: Any) -> None:
        args = record(**{key: _checked(key, values.pop(key)) for key in list(values) if key in field_names})
        result = operation.run(ctx, args, TERMINAL)
        lines = [note(result) if note is not None else None]
        lines.append(served(ctx, args, result, **values) if served is not None else None)
        for line in lines:
            if line:
                _say(f"ctx: note: {line}", err=True)
        if as_json:
            _emit_json(operation.answer(args, result))
        else:
            render(ctx, args, result, **values)

    run.__doc__ = operation.summary
    given = _extra_names(tuple(extra))
    decorators: list[Decorator] = [
        _parameter(item, hints[item.name], item.name in operation.positional)
        for item in fields(record)
        if item.name not in given
    ]
    decorators += [
        *extra,
        click.option(
            "--json", "as_json", is_flag=True, help=f"Print JSON (schemas/{operation.result}.schema.json)."
        ),
    ]
    function: Callable[..., Any] = run
    for decorator in reversed(decorators):
        function = decorator(function)
    command: click.Command = cli.command(name)(_with_store(function))
    return command


@cache
def _extra_names(extra: tuple[Decorator, ...]) -> frozenset[str]:
    """The names of the parameters ``extra`` adds."""

    def probe() -> None: ...

    for decorator in extra:
        decorator(probe)
    params: list[click.Parameter] = getattr(probe, "__click_params__", [])
    return frozenset(param.name for param in params if param.name is not None)

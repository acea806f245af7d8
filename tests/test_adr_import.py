"""`ctx import adr` / `ctx export adr`: chains rebuilt, idempotent, round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel import Ctx

DATA = Path(__file__).resolve().parent / "data" / "adr"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval" / "adr"


def _kernel_view(kernel: Ctx):
    return sorted(
        (
            d.subject,
            d.decision,
            d.valid_from,
            d.valid_until,
            d.closed_by,
            len(d.supersedes),
            len(d.superseded_by),
        )
        for d in kernel.decisions(include_closed=True)
    )


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_import_rebuilds_chains_and_is_idempotent(cli, store_path: Path, style: str):
    assert cli("init").code == 0
    first = cli("import", "adr", str(DATA / style), "--yes", "--reviewer", "alice", "--json")
    assert first.code == 0, first.err
    report = json.loads(first.out)
    assert report["decisions"]
    with Ctx.open(store_path) as kernel:
        decisions = kernel.decisions(include_closed=True)
        assert all(d.source and d.ratified_by for d in decisions)
        for d in decisions:
            for new_id in d.superseded_by:
                assert kernel.decision(new_id).valid_from >= d.valid_from
            if d.superseded_by:
                assert d.valid_until == min(kernel.decision(n).valid_from for n in d.superseded_by)
        subjects = [d.subject for d in kernel.decisions()]
        assert len(subjects) == len(set(subjects))
        audit_rows = kernel.verify_audit().rows
        imported = sum(e.action.endswith(".imported") for e in kernel.audit_events())
        assert imported == len(report["decisions"]) + len(report["proposals"])
        view = _kernel_view(kernel)
    again = json.loads(cli("import", "adr", str(DATA / style), "--yes", "--reviewer", "alice", "--json").out)
    assert again["decisions"] == [] and again["proposals"] == []
    with Ctx.open(store_path) as kernel:
        assert _kernel_view(kernel) == view and kernel.verify_audit().rows == audit_rows


def test_chain_of_three_and_statuses(kernel: Ctx):
    report = kernel.import_adrs(DATA / "nygard", reviewer="alice")
    by_number = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    one, four, nine = by_number[1], by_number[4], by_number[9]
    assert one.superseded_by == [four.id] and four.superseded_by == [nine.id] and nine.current
    assert one.valid_until == four.valid_from and four.valid_until == nine.valid_from
    assert [d.id for d in kernel.history(nine.subject)][-1] == nine.id
    statuses = {p.adr_number: p.status for p in kernel.store.list_proposals(status=None)}
    assert "pending" in statuses.values() and "rejected" in statuses.values()
    assert any("0010" in s for s in report.skipped)
    assert any("not in the folder" in w for w in report.warnings)


def test_superseded_by_two_successors(kernel: Ctx):
    kernel.import_adrs(DATA / "madr", reviewer="alice")
    split = [d for d in kernel.decisions(include_closed=True) if len(d.superseded_by) == 2]
    assert split, "the corpus has an ADR superseded by two successors"
    assert split[0].valid_until == min(kernel.decision(n).valid_from for n in split[0].superseded_by)


def test_show_json_carries_source_and_number(kernel: Ctx, cli):
    kernel.import_adrs(DATA / "nygard", reviewer="alice")
    decision = next(d for d in kernel.decisions() if d.adr_number == 9)
    shown = json.loads(cli("show", decision.id, "--json").out)["record"]
    assert shown["adr_number"] == 9 and shown["source"].endswith(".md")


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_export_then_import_reproduces_the_kernel(kernel: Ctx, tmp_path: Path, cli, style: str):
    kernel.import_adrs(DATA / style, reviewer="alice")
    proposal = kernel.propose("auth.tokens", "Use JWT with refresh rotation")
    kernel.ratify(proposal.id, reviewer="bob")
    kernel.ratify(kernel.propose("auth.tokens", "Opaque session ids").id, reviewer="bob")
    out = tmp_path / "exported"
    assert cli("export", "adr", str(out)).code == 0
    first = sorted(p.name for p in out.iterdir())
    kernel.export_adrs(out)
    assert sorted(p.name for p in out.iterdir()) == first  # stable names
    before = _kernel_view(kernel)
    assert kernel.import_adrs(out, reviewer="carol").decisions == []  # its own export: nothing new
    assert _kernel_view(kernel) == before
    other, _ = Ctx.init(tmp_path / "other.db")
    report = other.import_adrs(out, reviewer="carol")
    assert report.skipped == []
    assert _kernel_view(other) == _kernel_view(kernel)
    other.close()


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared ADR corpus not present")
def test_real_adr_folders_import_cleanly(tmp_path: Path):
    for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
        kernel, _ = Ctx.init(tmp_path / f"{folder.name}.db")
        report = kernel.import_adrs(folder, reviewer="alice")
        assert report.decisions, folder.name
        assert kernel.verify_audit().ok
        assert kernel.integrity_check() == "ok"
        kernel.close()

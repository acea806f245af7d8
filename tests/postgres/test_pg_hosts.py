"""The long-running hosts on a PostgreSQL store: `ctx mcp` keeps serving across a server restart."""

from __future__ import annotations

from pathlib import Path

from mcp_support import Agent, server_params

from ctx_kernel.kernel import Ctx


def test_ctx_mcp_keeps_serving_after_the_server_drops_its_connections(pg, tmp_path: Path, model_cache: Path):
    Ctx.init(pg.url(), embedder=None)[0].close()
    env = {
        "CTX_CONFIG_DIR": str(tmp_path / "config"),
        "CTX_CACHE_DIR": str(model_cache),
        "CTX_VECTORS": "off",
    }
    errlog_path = tmp_path / "stderr.txt"
    with (
        errlog_path.open("w", encoding="utf-8") as errlog,
        Agent(server_params(pg.url(), env), errlog) as agent,
    ):
        before = agent.call_json("log_evidence", {"text": "logged before the restart"})
        assert not before.is_error, before.content
        assert pg.drop_connections() >= 1
        after = agent.call_json("log_evidence", {"text": "logged after the restart"})
        assert not after.is_error, after.content
        found = agent.call_json("show", {"id": after.structured_content["id"]})
        assert not found.is_error, found.content
    with Ctx.open(pg.url(), embedder=None) as kernel:
        assert kernel.evidence(before.structured_content["id"]).text == "logged before the restart"
        assert kernel.evidence(after.structured_content["id"]).text == "logged after the restart"
    assert "Traceback" not in errlog_path.read_text(encoding="utf-8")

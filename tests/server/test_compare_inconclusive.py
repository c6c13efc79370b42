"""The dashboard's compare page says INCONCLUSIVE, never PASS, for an increase within its noise."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import Server
from tests.server.helpers import local_document


def test_compare_page_says_inconclusive(server: Server, tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {server.tokens['A-write']}"}
    for k, (side, gpu_j) in enumerate((("a", 8000.0), ("a", 16000.0), ("b", 10000.0),
                                       ("b", 30000.0))):  # fmt: skip
        doc = local_document(tmp_path, name=f"r{k}", tags={"side": side}, gpu_j=gpu_j,
                             start=1.7e9 + 100 * k)  # fmt: skip
        assert server.client.post("/api/v1/runs", json=doc, headers=headers).status_code == 201
    page = server.client.get("/compare?tag_a=side%3Da&tag_b=side%3Db", headers=headers)
    assert page.status_code == 200
    assert 'data-outcome="inconclusive"' in page.text
    assert "greenml check: INCONCLUSIVE energy per run +62.0 %" in page.text
    assert "runs a side would decide it" in page.text
    assert "PASS" not in page.text

"""The pipeline-schedules page says when it predicts torch's interleaved order, not Megatron's."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

pytestmark = pytest.mark.demo


def test_run_panel_explains_torchs_order_at_as_many_micro_batches_as_ranks(
    app_client: TestClient,
) -> None:
    panel = app_client.get("/demos/pipeline-schedules/run", params={"microbatches": 2})
    assert panel.status_code == 200
    assert 'id="pp-torch-order"' in panel.text and "_get_warmup_ops" in panel.text
    # From m = 2p on torch and Megatron-LM run the same order: no note.
    panel = app_client.get("/demos/pipeline-schedules/run", params={"microbatches": 4})
    assert panel.status_code == 200 and 'id="pp-torch-order"' not in panel.text

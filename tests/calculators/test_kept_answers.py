"""The calculators' JSON answers, kept by their validated inputs (app/calculators/results.py):
byte for byte what FastAPI sends for the response model, computed once per question, and
sent again for the same address before the query is parsed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import Request
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.calc.communication_query import CommunicationQuery, communication_result
from app.calc.pipeline_query import PipelineQuery, pipeline_result
from app.calc.planner_query import PlannerInputs
from app.calc.training_query import TrainingQuery, training_result
from app.calculators.api import memory_result
from app.calculators.communication_router import CommunicationResult
from app.calculators.pipeline_router import PipelineResult
from app.calculators.planner_router import PlannerResult, searched
from app.calculators.results import ANSWERS, ASKED
from app.calculators.schemas import MemoryQuery, MemoryResult, TrainingMemoryResult
from app.config import Settings
from app.main import create_app

# name: (the API's path, a question, its query model, its response model, the computation)
ANSWERED: dict[str, tuple[str, dict[str, Any], type[BaseModel], type[BaseModel],
                          Callable[[Any], Any]]] = {
    "memory": ("/api/calc/memory", {"params": "7.5e9", "dp_degree": 64}, MemoryQuery,
               MemoryResult, memory_result),
    "training-memory": ("/api/calc/training-memory",
                        {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "seq_len": 8192},
                        TrainingQuery, TrainingMemoryResult, training_result),
    "communication": ("/api/calc/communication",
                      {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "microbatches": 8},
                      CommunicationQuery, CommunicationResult, communication_result),
    "pipeline": ("/api/calc/pipeline", {"schedule": "interleaved", "pp": 4, "microbatches": 8,
                                        "virtual_stages": 2}, PipelineQuery, PipelineResult,
                 pipeline_result),
    "planner": ("/api/calc/planner", {"preset": "custom", "layers": 4, "hidden": 64, "heads": 4,
                                      "kv_heads": 4, "ffn_hidden": 256, "vocab": 128,
                                      "nodes": 1, "gpus_per_node": 8, "seq_len": 16,
                                      "global_batch_tokens": 128, "token_budget": 1e9},
                PlannerInputs, PlannerResult, lambda q: searched(q, "query")),
}  # fmt: skip


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    ANSWERS.clear()
    ASKED.clear()
    app = create_app(settings)

    # Each answer as FastAPI serialises the response model itself, for the kept bytes to equal.
    def whole(name: str) -> None:
        _path, _question, query_model, result_model, compute = ANSWERED[name]

        @app.get(f"/whole/{name}", response_model=result_model)
        def answer(request: Request) -> Any:
            return result_model.model_validate(compute(query_model(**request.query_params)))

    for name in ANSWERED:
        whole(name)
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize("name", ANSWERED)
def test_a_kept_answer_is_what_fastapi_sends_and_is_computed_once(
    client: TestClient, name: str
) -> None:
    path, question = ANSWERED[name][:2]
    expected = client.get(f"/whole/{name}", params=question)
    first = client.get(path, params=question)
    misses = ANSWERS.misses
    # The same address: sent as it was kept, the route not asked (ANSWERS sees nothing).
    again = client.get(path, params=question)
    # The same question at another address: parsed, validated, and found kept by its inputs.
    reordered = client.get(path, params=dict(reversed(question.items())))
    assert first.status_code == again.status_code == expected.status_code == 200
    assert first.content == again.content == reordered.content == expected.content
    for answer in (first, again):
        assert answer.headers["content-type"] == expected.headers["content-type"]
    assert ASKED.hits == 1
    assert (ANSWERS.misses, ANSWERS.hits) == (misses, 1)


def test_one_question_asked_two_ways_is_one_answer(client: TestClient) -> None:
    plain = client.get("/api/calc/memory", params={"params": "7500000000", "dp_degree": "64"})
    written = client.get("/api/calc/memory", params={"dp_degree": "64", "params": "7.5e9"})
    assert written.content == plain.content and ANSWERS.hits == 1
    other = client.get("/api/calc/memory", params={"params": "7.5e9", "dp_degree": "8"})
    assert other.json()["dp_degree"] == 8 and ANSWERS.misses == 2


def test_a_refused_question_is_refused_again_and_not_kept(client: TestClient) -> None:
    # A batch that is no whole number of sequences: the planner's own check, in the route's
    # thread, refuses it.
    question = {**ANSWERED["planner"][1], "global_batch_tokens": 100}
    for _ in range(2):
        refused = client.get("/api/calc/planner", params=question)
        assert refused.status_code == 422
    for _ in range(2):  # refused by FastAPI's own validation
        assert client.get("/api/calc/memory", params={"params": "-1"}).status_code == 422
    assert len(ANSWERS) == len(ASKED) == 0


def test_an_answer_is_kept_under_its_address_only_for_the_api(client: TestClient) -> None:
    client.get("/api/calc/memory", params={"params": "7e9", "dp_degree": 8})
    client.post("/api/calc/planner", json=ANSWERED["planner"][1])  # a body, not an address
    assert len(ASKED) == 1 and len(ANSWERS) == 2

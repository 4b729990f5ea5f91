"""The layout planner over HTTP and the shell: the planner's numbers, the same everywhere, links
that carry them to the other calculators, and clear 422s."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.model import ModelConfig
from app.calc.planner import Layout, cluster, plan, plan_request, why_not
from app.calc.planner.published import RUNS, evaluate_run
from app.calc.planner_fields import RUN_PRESETS
from app.calc.planner_query import PlannerQuery
from app.formatting import memory
from app.worked.planner import TERM_CARDS

# The test_planner TINY model (4 layers, h 64, 4 heads) on one node of 8 H100s,
# 8 sequences of 16 tokens per step.
TINY = {"preset": "custom", "layers": 4, "hidden": 64, "heads": 4, "kv_heads": 4,
        "ffn_hidden": 256, "vocab": 128, "nodes": 1, "gpus_per_node": 8,
        "global_batch_tokens": 128, "seq_len": 16, "token_budget": 1e9}  # fmt: skip
TINY_MODEL = ModelConfig(layers=4, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, vocab=128)
SMALL = {"preset": "llama3-8b", "nodes": 1, "global_batch_tokens": 2**20, "seq_len": 8192}


def _tiny_plan():  # the planner asked directly, as the page's query asks it
    return plan(plan_request(TINY_MODEL, cluster(nodes=1), 128, 16, 1e9))


def test_api_returns_the_planners_ranking_front_and_rejections(client: TestClient) -> None:
    expected = _tiny_plan()
    api = client.get("/api/calc/planner", params=TINY).json()
    assert (api["enumerated"], api["valid"], api["feasible"]) == (
        expected.enumerated, expected.valid, expected.feasible,
    )  # fmt: skip
    assert [r["layout"]["description"] for r in api["ranked"]] == [
        c.layout.describe() for c in expected.ranked
    ]
    assert [r["step_time_s"] for r in api["pareto"]] == [c.step_time_s for c in expected.pareto]
    assert [(g["rule"], g["count"]) for g in api["rejected"]] == [
        (g.rule, g.count) for g in expected.rejected
    ]
    best = expected.best
    assert api["chosen_is_best"] and api["why_not"] is None
    assert api["chosen"]["memory_bytes"] == best.memory_bytes
    assert api["chosen"]["step"] == best.step.terms()
    assert sum(api["chosen"]["step"].values()) == pytest.approx(api["chosen"]["step_time_s"])
    assert api["cluster"]["gpus"] == 8 and api["global_batch_sequences"] == 8


def test_a_named_layout_is_explained_and_shown(client: TestClient) -> None:
    layout = {"dp": 2, "tp": 4, "zero_stage": 1, "micro_batch": 2}
    api = client.get("/api/calc/planner", params={**TINY, **layout}).json()
    expected = why_not(_tiny_plan(), Layout(dp=2, tp=4, zero_stage=1, micro_batch=2))
    assert api["why_not"]["explanation"] == expected.explanation
    assert api["why_not"]["slowdown"] == expected.slowdown
    assert api["why_not"]["blame"] == expected.blame
    assert api["chosen"]["layout"]["description"] == expected.layout.describe()
    assert api["chosen"]["step_time_s"] == expected.cost.step_time_s


def test_a_layout_that_breaks_rules_names_them_with_their_reasons(client: TestClient) -> None:
    api = client.get("/api/calc/planner", params={**TINY, "dp": 3, "tp": 4}).json()
    why = api["why_not"]
    assert not why["valid"] and why["fits"] is None
    rules = {b["rule"]: b["reason"] for b in why["broken"]}
    assert rules["world_size"] == "dp*tp*pp*cp = 12, not 8 GPUs"
    assert rules["dp_divides_batch"] == "dp=3 does not divide the 8 sequences per step"
    assert api["chosen_is_best"]  # nothing to break down: the best is shown instead
    page = client.get("/calculators/planner", params={**TINY, "dp": 3, "tp": 4}).text
    assert 'data-rule="world_size"' in page and "dp*tp*pp*cp = 12, not 8 GPUs" in page


def test_post_gives_what_get_gives(client: TestClient) -> None:
    get = client.get("/api/calc/planner", params={**TINY, "dp": 4, "tp": 2}).json()
    post = client.post("/api/calc/planner", json={**TINY, "dp": 4, "tp": 2}).json()
    assert post == get


def test_cli_json_equals_the_api(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    params = {**TINY, "dp": 2, "tp": 2, "pp": 2}
    api = client.get("/api/calc/planner", params=params).json()
    args = ["plan", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api


def test_cli_prints_a_table_rules_and_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["plan", *(f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()),
                "--dp", "3", "--tp", "4"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    expected = _tiny_plan()
    assert f"{expected.enumerated} candidates, {expected.valid} valid" in out
    assert "why not dp=3 tp=4" in out and "world_size" in out
    assert "never considered:" in out and expected.rejected[0].rule in out


def test_page_shows_table_chart_breakdown_and_links(client: TestClient) -> None:
    page = client.get("/calculators/planner", params=SMALL)
    assert page.status_code == 200
    text = page.text
    api = client.get("/api/calc/planner", params=SMALL).json()
    assert text.count('<a class="pick"') == len(api["ranked"])
    chart = json.loads(html.unescape(re.search(r'data-chart="([^"]*)"', text).group(1)))
    assert sum(s is not None for s in chart["front_s"]) == len(api["pareto"])
    best = api["ranked"][0]
    assert f'id="chosen-memory">{memory(best["memory_bytes"])}<' in text
    for term in api["step_terms"]:
        assert f'data-term="{term}"' in text
    for card in set(TERM_CARDS.values()):
        assert f'href="/cards/{card}"' in text
    for group in api["rejected"]:
        assert f'data-rule="{group["rule"]}"' in text
    assert "/calculators/pipeline?" not in text  # pp = 1: no bubble to open


def test_every_linked_card_exists(client: TestClient) -> None:
    for card in set(TERM_CARDS.values()):
        assert client.get(f"/cards/{card}").status_code == 200


def test_memory_link_opens_the_same_numbers(client: TestClient) -> None:
    params = {**SMALL, "preset": "llama3-70b", "nodes": 4}
    page = html.unescape(client.get("/calculators/planner", params=params).text)
    url = re.search(r'id="training-link" href="([^"]*)"', page).group(1)
    chosen = client.get("/api/calc/planner", params=params).json()["chosen"]
    query = dict(parse_qsl(urlsplit(url).query))
    for knob in ("dp", "tp", "pp", "cp", "zero_stage", "micro_batch", "recompute"):
        assert query[knob] == str(chosen["layout"][knob])
    assert query["microbatches"] == str(chosen["microbatches"])
    training = client.get("/api/calc/training-memory", params=query).json()
    # The page the link opens shows the same memory as a GPU reports it: the textbook terms,
    # the loss's temporaries, NCCL's buffers and the allocator's reserve.
    assert query["measured"] == "true"
    assert training["gpu_bytes"] == pytest.approx(chosen["memory_bytes"], rel=1e-12)
    bubble = re.search(r'href="(/calculators/pipeline\?[^"]*)"', page)
    if chosen["layout"]["pp"] > 1:
        pipeline_query = dict(parse_qsl(urlsplit(bubble.group(1)).query))
        pipeline = client.get("/api/calc/pipeline", params=pipeline_query).json()
        assert pipeline["closed_form"]["bubble_time"] / 1e3 == pytest.approx(
            chosen["step"]["bubble"], rel=1e-3
        )


def test_fragment_shares_a_url_holding_the_picked_layout(client: TestClient) -> None:
    fragment = client.get("/calculators/planner/result", params={**TINY, "dp": 2, "tp": 4})
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    assert "dp=2" in url and "tp=4" in url and "layers=4" in url
    again = client.get(url.replace("/planner?", "/planner/result?"))
    assert again.text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nodes": 0}, "Nodes: must be at least 1"),
        ({"gpus_per_node": 17}, "GPUs per node: must be at most 16"),
        ({"nodes": 2048, "gpus_per_node": 16}, "must be at most 16,384"),
        ({"global_batch_tokens": 8}, "at least one sequence"),
        ({"global_batch_tokens": 24}, "whole number of 16-token sequences"),
        ({"matmul_efficiency": 1.5}, "Matmul efficiency: must be at most 1"),
        ({"matmul_efficiency": 0.01}, "Matmul efficiency: must be at least 0.05"),
        ({"kv_heads": 3}, "KV heads must divide the attention heads"),
        ({"global_batch_tokens": 2**21}, "at most 65,536 sequences"),
        ({"zero_stage": 4}, "Layout ZeRO stage: must be at most 3"),
        ({"schedule": "dualpipe"}, "Layout schedule:"),
        ({"gpu": "tpu-v5e"}, "GPU type:"),
        ({"token_budget": "lots"}, "Token budget: must be a number"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get("/calculators/planner/result", params={**TINY, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    assert "HX-Replace-Url" not in fragment.headers
    for response in (
        client.get("/api/calc/planner", params={**TINY, **params}),
        client.post("/api/calc/planner", json={**TINY, **params}),
    ):
        assert response.status_code == 422


def test_cli_names_the_bad_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli(["plan", "--nodes", "0"])
    assert exc.value.code == 2
    assert "--nodes" in capsys.readouterr().err


def test_api_is_documented(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for method in ("get", "post"):
        operation = schema["paths"]["/api/calc/planner"][method]
        assert operation["tags"] == ["calculators"]
    assert "Pareto" in schema["paths"]["/api/calc/planner"]["get"]["description"]
    assert "/calculators/planner" not in schema["paths"]


fields = st.sampled_from(sorted(PlannerQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 300).map(str),
    st.sampled_from(
        "true false nan inf 1e400 0.5 1f1b interleaved full custom mixtral-8x7b".split()
    ),
)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in ("/api/calc/planner", "/calculators/planner/result"):
        response = client.get(path, params={**TINY, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


@pytest.mark.parametrize("slug", list(RUNS))
def test_every_published_run_is_a_preset_within_its_band(client: TestClient, slug: str) -> None:
    run = RUNS[slug]
    response = client.get("/api/calc/planner", params={"run": slug})
    assert response.status_code == 200
    api = response.json()
    published = api["published"]
    assert published["layout"]["description"] == run.layout.describe()
    expected = evaluate_run(run)
    assert published["predicted"] == expected.predicted and published["ratio"] == expected.ratio
    assert run.band[0] <= published["ratio"] <= run.band[1] and published["in_band"]
    assert api["cluster"]["gpus"] == run.cluster.gpus
    assert api["cluster"]["inter_node"] == run.cluster.inter_node.slug
    assert api["why_not"]["layout"]["dp"] == run.layout.dp  # the published layout is picked
    assert RUN_PRESETS[slug][2] == {"run": slug}


def test_page_shows_the_published_panel(client: TestClient) -> None:
    page = client.get("/calculators/planner", params={"run": "bloom-176b"}).text
    published = client.get("/api/calc/planner", params={"run": "bloom-176b"}).json()["published"]
    assert 'id="published-figure">150 TFLOP/s per GPU<' in page
    assert f'id="published-predicted">{published["predicted"] / 1e12:.3g} TFLOP/s per GPU<' in page
    assert 0.9 <= published["ratio"] <= 1.1  # costed with the profile fitted to its kind
    assert "arXiv:2211.05100" in page and f"{published['ratio']:.2f}×" in page
    assert f"of {published['feasible']:,} feasible layouts" in page
    assert f"{published['slowdown']:.2f}× the best step time" in page
    assert 'data-rule="pp_divides_layers"' in page  # strict equal stages reject it
    assert '<fieldset class="plain" disabled>' in page  # the run fixes the model and cluster
    for _, (label, _, _) in RUN_PRESETS.items():
        assert html.escape(label) in page


def test_a_published_runs_gap_is_said_in_the_readers_language(client: TestClient) -> None:
    # The API keeps the English; the page says it again in Chinese.
    gap = client.get("/api/calc/planner", params={"run": "bloom-176b"}).json()["published"]
    assert gap["gap"].startswith("costed with the profile fitted to ZeRO-style runs")
    page = client.get("/calculators/planner", params={"run": "bloom-176b", "lang": "zh"}).text
    assert "用拟合 ZeRO 风格训练（MT-NLG、BLOOM、OPT）得到的性能档案估算" in page
    assert "ZeRO-style runs" not in page


def test_a_run_rejects_what_it_fixes_and_unknown_slugs(client: TestClient) -> None:
    for params, message in (
        ({"run": "bloom-176b", "nodes": 2}, "leave out Nodes"),
        ({"run": "gpt-5"}, "Published run:"),
    ):
        assert client.get("/api/calc/planner", params=params).status_code == 422
        fragment = client.get("/calculators/planner/result", params=params)
        assert fragment.status_code == 422 and message in fragment.text


def test_cli_json_equals_the_api_for_a_run(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    api = client.get("/api/calc/planner", params={"run": "megatron-1t"}).json()
    assert cli(["plan", "--json", "--run", "megatron-1t"]) == 0
    assert json.loads(capsys.readouterr().out) == api
    assert cli(["plan", "--run", "megatron-1t"]) == 0
    assert "published: Megatron-LM GPT 1T" in capsys.readouterr().out


@pytest.mark.parametrize("run", [{"a": 1}, ["bloom-176b"], 3])
def test_a_run_that_is_no_slug_is_a_422(client: TestClient, run: object) -> None:
    assert client.post("/api/calc/planner", json={"run": run}).status_code == 422

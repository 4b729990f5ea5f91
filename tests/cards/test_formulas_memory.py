"""Formulas the memory cards state in prose agree with the calculators behind their examples.

Each test reads the formula or table row back from the card (a regex over the card file, so
editing the card's formula breaks the test) and evaluates it against the calculator function
on the card's own worked-example inputs. Batch: adam-bytes-per-parameter, memory-anatomy,
mixed-precision, activation-checkpointing, gradient-accumulation, dp-vs-ddp, fp8-training,
inference-kv-cache.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

from app.calc.activations import ActivationSetup, layer_activations
from app.calc.comm import Collective, ring_factor
from app.calc.comm_volume import ddp_elements, zero_elements
from app.calc.float_formats import BF16, FP16, FP32, FloatFormat
from app.calc.flops import flops_per_token, megatron_flops_per_iteration
from app.calc.inference import inference_memory, kv_bytes_per_token
from app.calc.inference_query import InferenceQuery
from app.calc.model import PRESETS, ModelConfig, count_params
from app.calc.precision import bytes_per_param, conventions
from tests.cards.card_text import card_text, example_blocks


def _sum(cell: str) -> int:
    """A table cell such as '2', '2 + 4' or '**16**' as a number."""
    cell = cell.replace("*", "").strip()
    assert re.fullmatch(r"\d+( \+ \d+)*", cell), f"unexpected cell {cell!r}"
    return sum(int(x) for x in cell.split("+"))


# --- adam-bytes-per-parameter: the bytes-per-parameter table -------------------------------


def _adam_row(card: str, label: str) -> list[str]:
    row = re.search(rf"^\| {re.escape(label)} \|(.*)\|$", card, flags=re.MULTILINE)
    assert row, f"no table row {label!r} in adam-bytes-per-parameter.md"
    return [c.strip() for c in row.group(1).split("|")]


@pytest.mark.parametrize(
    ("label", "recipe"),
    [
        ("ZeRO, mixed precision", "mixed_bf16"),
        ("Megatron, bf16 params with fp32 main grads", "mixed_bf16_fp32_grads"),
        ("Plain fp32 training", "fp32"),
    ],
)
def test_adam_table_rows_match_bytes_per_param(label: str, recipe: str) -> None:
    weights, grads, master, moments, total, *_ = _adam_row(card_text("adam-bytes-per-parameter"),
                                                           label)  # fmt: skip
    calc = bytes_per_param(recipe, "adam")
    assert (_sum(weights), _sum(grads), _sum(master), _sum(moments)) == (
        calc.weights,
        calc.grads,
        calc.master,
        calc.optimizer,
    )
    assert _sum(total) == calc.total
    assert calc.optimizer_states == calc.master + calc.optimizer  # the ZeRO paper's K


def test_adam_deepspeed_row_is_the_calculators_estimator_convention() -> None:
    weights, grads, master, moments, total, *_ = _adam_row(
        card_text("adam-bytes-per-parameter"), "DeepSpeed ZeRO-2 estimator"
    )
    shown = re.fullmatch(r"\*\*(\d+)\*\* \(\$(\d+) \+ (\d+)/N\$\)", total)
    assert shown, f"unexpected total cell {total!r}"
    one_gpu, whole, sharded = (int(g) for g in shown.groups())
    assert _sum(grads) + _sum(master) + _sum(moments) == sharded
    assert _sum(weights) == whole and whole + sharded == one_gpu
    estimator = next(c for c in conventions() if "DeepSpeed" in c.label)
    assert estimator.bytes_per_param == sharded


def test_adam_worked_examples_ratios() -> None:
    card = card_text("adam-bytes-per-parameter")
    assert "The gradient row is twice the weight row" in card
    megatron = bytes_per_param("mixed_bf16_fp32_grads", "adam")
    assert megatron.grads == 2 * megatron.weights
    assert "The optimizer-state row shrinks to a quarter" in card
    eight_bit, adam = bytes_per_param("mixed_bf16", "adam_8bit"), bytes_per_param()
    assert Fraction(eight_bit.optimizer) / Fraction(adam.optimizer) == Fraction(1, 4)


# --- Korthikanti's per-layer activations (memory-anatomy, activation-checkpointing) --------

# Korthikanti et al.'s setting: GPT-3 175B (a = 96, h = 12288, s = 2048), MHA, GeLU MLP of 4h,
# LayerNorm, dropout, 16-bit activations, no FlashAttention.
GPT3 = ModelConfig(layers=96, hidden=12288, heads=96, kv_heads=96, ffn_hidden=4 * 12288,
                   vocab=51200, ffn_type="gelu", norm="layernorm", name="GPT-3 175B")  # fmt: skip
S, B, H, A = 2048, 1, 12288, 96


def _layer_formula(card: str) -> tuple[int, int]:
    """(34, 5) from the card's sbh(34 + 5as/h), as written."""
    found = re.search(r"sbh\\?,?\s*\\?left\(\s*(\d+) \+ \\frac\{(\d+)as\}\{h\}|"
                      r"sbh\\?,?\((\d+) \+ (\d+)as/h\)", card)  # fmt: skip
    assert found, "no sbh(34 + 5as/h) formula in the card"
    linear, scores = (g for g in found.groups() if g is not None)
    return int(linear), int(scores)


@pytest.mark.parametrize("name", ["memory-anatomy", "activation-checkpointing"])
def test_per_layer_activation_formula_matches_the_calculator(name: str) -> None:
    linear, scores = _layer_formula(card_text(name))
    layer = layer_activations(GPT3, ActivationSetup(seq_len=S, micro_batch=B))
    assert layer.total == S * B * H * (linear + scores * A * S / H)
    assert layer.attention_scores == scores * A * S * S * B


def test_memory_anatomy_names_the_three_score_tensors() -> None:
    card = card_text("memory-anatomy")
    tensor = r"\(\$(\d*)as\^2b\$\)"
    parts = re.search(rf"the softmax output {tensor}, its dropout mask {tensor} and the dropout "
                      rf"output {tensor}", card)  # fmt: skip
    assert parts, "memory-anatomy no longer lists the softmax output, mask and dropout output"
    coefficients = [int(c or 1) for c in parts.groups()]
    _, scores = _layer_formula(card)
    assert sum(coefficients) == scores
    # the calculator: softmax output (2 bytes), mask (1 byte), dropout output (2 bytes)
    score_elements = A * S * S * B
    layer = layer_activations(GPT3, ActivationSetup(seq_len=S, micro_batch=B))
    assert layer.attention_scores == sum(coefficients) * score_elements


def test_activation_checkpointing_table_rows() -> None:
    card = card_text("activation-checkpointing")
    selective = re.search(r"^\| Selective [^|]*\| \$(\d+)\\,sbh/t\$ \|", card, flags=re.MULTILINE)
    full = re.search(r"^\| Full [^|]*\| \$(\d+)sbh\$ \|", card, flags=re.MULTILINE)
    assert selective and full
    t = 8
    sel = layer_activations(GPT3, ActivationSetup(seq_len=S, micro_batch=B, tp=t, sp=True,
                                                  recompute="selective"))  # fmt: skip
    assert sel.total == int(selective.group(1)) * S * B * H / t
    whole = layer_activations(GPT3, ActivationSetup(seq_len=S, micro_batch=B, recompute="full"))
    assert whole.total == int(full.group(1)) * S * B * H


def test_activation_checkpointing_flops_factors() -> None:
    card = card_text("activation-checkpointing")
    per_token = re.search(r"from \$(\d+)N\$ to \$(\d+)N\$ FLOPs", card)
    megatron = re.search(
        r"\$(\d+)Bslh\^2\(\\ldots\)\$ instead of \$(\d+)Bslh\^2\(\\ldots\)\$", card
    )
    assert per_token and megatron
    plain, recompute = (int(g) for g in per_token.groups())
    n = 70e9
    assert flops_per_token(n, "training") == plain * n
    assert flops_per_token(n, "training_recompute") == recompute * n
    with_recompute, without = (int(g) for g in megatron.groups())
    b, s, layers, h, v = 1, 8192, 80, 8192, 128256  # Llama 3 70B's shape, the worked example
    assert megatron_flops_per_iteration(b, s, layers, h, v, recompute=True) == pytest.approx(
        with_recompute * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    )
    assert megatron_flops_per_iteration(b, s, layers, h, v, recompute=False) == pytest.approx(
        without * b * s * layers * h**2 * (1 + s / (6 * h) + v / (12 * layers * h))
    )
    assert Fraction(with_recompute, without) == Fraction(recompute, plain)


# --- mixed-precision: the format table and the 16-byte sum --------------------------------


def _format_row(card: str, name: str) -> list[str]:
    row = re.search(rf"^\| {name} \|(.*)\|$", card, flags=re.MULTILINE)
    assert row, f"no {name} row"
    return [c.strip() for c in row.group(1).split("|")]


@pytest.mark.parametrize(("name", "fmt"), [("FP32", FP32), ("BF16", BF16), ("FP16", FP16)])
def test_mixed_precision_format_table(name: str, fmt: FloatFormat) -> None:
    layout, largest, normal, epsilon = _format_row(card_text("mixed-precision"), name)
    sign, exponent, mantissa = (int(x) for x in layout.split(" / "))
    assert (sign, exponent, mantissa) == (1, fmt.exponent_bits, fmt.fraction_bits)
    value = re.search(r"(\d+(?:\.\d+)?)(?: \\times 10\^\{(\d+)\})?", largest)
    assert value
    stated = float(value.group(1)) * 10 ** int(value.group(2) or 0)
    digits = len(value.group(1).split(".")[1]) if "." in value.group(1) else 0
    assert stated == pytest.approx(fmt.max_finite, abs=10 ** (int(value.group(2) or 0) - digits))
    assert f"2^{{{round(math.log2(fmt.smallest_normal))}}}" in normal
    assert f"2^{{-{fmt.fraction_bits}}}" in epsilon


def test_mixed_precision_model_state_sum() -> None:
    card = card_text("mixed-precision")
    found = re.search(r"\$(\d)\+(\d)\+(\d) = (\d)\+(\d)\+(\d)\+(\d) = (\d+)\$ bytes per parameter",
                      card)  # fmt: skip
    assert found
    n = [int(g) for g in found.groups()]
    fp32, mixed = bytes_per_param("fp32", "adam"), bytes_per_param("mixed_bf16", "adam")
    assert n[:3] == [fp32.weights, fp32.grads, fp32.optimizer] and fp32.master == 0
    assert n[3:7] == [mixed.weights, mixed.grads, mixed.master, mixed.optimizer]
    assert fp32.total == mixed.total == n[7]


# --- fp8-training: the E5M2 row is IEEE-like; E4M3 shares its normals and subnormals --------


def test_fp8_table_against_float_format() -> None:
    card = card_text("fp8-training")

    def row(label: str) -> list[str]:
        found = re.search(rf"^\| {label} \|(.*)\|$", card, flags=re.MULTILINE)
        assert found, label
        return [c.strip() for c in found.group(1).split("|")]

    e4m3, e5m2 = FloatFormat("e4m3", 4, 3, "OCP"), FloatFormat("e5m2", 5, 2, "OCP")
    largest, normal, subnormal = (
        row("Largest finite"),
        row("Smallest normal"),
        row("Smallest subnormal"),
    )
    assert float(largest[1]) == e5m2.max_finite  # 57344: IEEE-style, infinities kept
    # E4M3 gives up infinities and all but one NaN, so it reaches 448, not the IEEE 240.
    assert float(largest[0]) == 448 and e4m3.max_finite == 240
    for cells, fmt_index, fmt in ((normal, 0, e4m3), (normal, 1, e5m2)):
        exp = re.search(r"2\^\{(-\d+)\}", cells[fmt_index])
        assert exp and 2.0 ** int(exp.group(1)) == fmt.smallest_normal
    for fmt_index, fmt in ((0, e4m3), (1, e5m2)):
        exp = re.search(r"2\^\{(-\d+)\}", subnormal[fmt_index])
        assert exp and 2.0 ** int(exp.group(1)) == fmt.smallest_subnormal


# --- gradient-accumulation: traffic per step by scheme ------------------------------------


def _ga_coefficient(card: str, scheme: str) -> str:
    row = re.search(rf"^\| {re.escape(scheme)} \|[^|]*\| (?:[^|$]*, )?\$\\approx ([^$]*)\$ \|",
                    card, flags=re.MULTILINE)  # fmt: skip
    assert row, f"no {scheme} row with a per-step volume"
    return row.group(1)


def _psi_polynomial(text: str, m: int) -> int:
    """'2\\Psi', 'M\\Psi + \\Psi', '3M\\Psi' or '2M\\Psi' at M = m, in units of Psi."""
    total = 0
    for term in text.split("+"):
        found = re.fullmatch(r"\s*(\d*)(M?)\\Psi\s*", term)
        assert found, f"unexpected term {term!r}"
        total += int(found.group(1) or 1) * (m if found.group(2) else 1)
    return total


@pytest.mark.parametrize(
    ("scheme", "stage"),
    [
        ("DDP with `no_sync`", 0),
        ("ZeRO-1 / Megatron distributed optimizer", 1),
        ("ZeRO-2", 2),
        ("ZeRO-3", 3),
    ],
)
def test_gradient_accumulation_table_matches_zero_elements(scheme: str, stage: int) -> None:
    card = card_text("gradient-accumulation")
    coefficient = _ga_coefficient(card, scheme)
    psi = 8.03e9  # Llama 3 8B, the worked example; N_d = 8, M = 8 micro-batches
    for m in (1, 8):
        for n in (2, 8, 64):
            stated = _psi_polynomial(coefficient, m) * Fraction(n - 1, n) * Fraction(psi)
            assert float(stated) == pytest.approx(zero_elements(psi, n, stage, m), rel=1e-12)


def test_gradient_accumulation_without_no_sync_multiplies_ddp_traffic() -> None:
    coefficient = _ga_coefficient(card_text("gradient-accumulation"), "DDP without `no_sync`")
    psi, n, m = 8.03e9, 8, 8
    stated = _psi_polynomial(coefficient, m) * Fraction(n - 1, n) * Fraction(psi)
    assert float(stated) == pytest.approx(m * ddp_elements(psi, n), rel=1e-12)


# --- dp-vs-ddp: the ring factor ------------------------------------------------------------


def test_dp_vs_ddp_ring_factor() -> None:
    card = card_text("dp-vs-ddp")
    found = re.search(r"the ring factor \$(\d+)\(N-1\)/N\$", card)
    assert found
    example = example_blocks(card, "communication")[0]
    for n in (2, example["dp"], 64):
        assert ring_factor(Collective.ALL_REDUCE, n) == int(found.group(1)) * Fraction(n - 1, n)


# --- inference-kv-cache: bytes per token and the batch bound -------------------------------


def _kv_formula(card: str) -> str:
    found = re.search(
        r"\$\$(2 \\cdot L \\cdot k \\cdot d \\cdot B_\{kv\})\\ \\text\{bytes\},\$\$", card
    )
    assert found, "no 2·L·k·d·B_kv formula in inference-kv-cache.md"
    return found.group(1)


def _evaluate_kv(formula: str, layers: int, kv_heads: int, head_dim: int, b_kv: float) -> float:
    python = (formula.replace(r"\cdot", "*").replace("B_{kv}", "B")
              .replace("L", "layers").replace("k", "kv").replace("d", "hd"))  # fmt: skip
    return eval(
        python,
        {"__builtins__": {}},  # noqa: S307 - a formula read from our own card
        {"layers": layers, "kv": kv_heads, "hd": head_dim, "B": b_kv},
    )


def test_kv_formula_on_llama2_70b() -> None:
    card = card_text("inference-kv-cache")
    shape = re.search(r"\$a = (\d+)\$ query heads and \$k = (\d+)\$ KV heads, \$L = (\d+)\$ "
                      r"and \$d = (\d+)\$", card)  # fmt: skip
    assert shape
    a, k, layers, d = (int(g) for g in shape.groups())
    cfg = PRESETS["llama2-70b"]
    assert (cfg.heads, cfg.kv_heads, cfg.layers, cfg.dim_per_head) == (a, k, layers, d)
    stated = _evaluate_kv(_kv_formula(card), layers, k, d, 2)
    assert stated == kv_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.dim_per_head, 2)
    assert re.search(rf"\$a/k = {a // k}\$ times smaller", card)
    assert _evaluate_kv(_kv_formula(card), layers, a, d, 2) == (a // k) * stated


def test_kv_formula_gives_pagedattentions_800_kb_for_opt_13b() -> None:
    card = card_text("inference-kv-cache")
    assert "800 KB per token for OPT-13B" in card
    # OPT-13B: 40 layers, hidden 5120 = 40 heads of 128, MHA, fp16 (arXiv:2309.06180 §3)
    assert _evaluate_kv(_kv_formula(card), 40, 40, 128, 2) == 800 * 1024


def test_kv_batch_bound_matches_the_calculators_largest_batch() -> None:
    card = card_text("inference-kv-cache")
    assert re.search(r"b \\cdot s \\le \\frac\{u \\cdot M_\\text\{GPU\} - \\Psi B_w/t - O\}"
                     r"\{2 L k_\\text\{GPU\} d B_\{kv\}\}", card)  # fmt: skip
    query = InferenceQuery.model_validate(example_blocks(card, "inference-memory")[0])
    setup = query.setup()
    cfg = setup.model
    k_gpu = max(1, cfg.kv_heads // setup.tp)
    bound = (setup.utilisation * setup.gpu_memory_bytes - count_params(cfg).total * 2 / setup.tp
             - setup.overhead_bytes) / (2 * cfg.layers * k_gpu * cfg.dim_per_head * 2)  # fmt: skip
    report = inference_memory(setup)
    assert report.largest_batch == int(bound // setup.context)
    assert report.kv_heads_per_gpu == k_gpu == 2  # "Each GPU holds two of the eight KV heads."
    assert "Each GPU holds two of the eight KV heads" in card

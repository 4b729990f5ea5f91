"""System-design rounds (issue #27): a scenario a learner designs for, on one answer sheet.

One YAML file per round in content/design/ (its words, inputs and model answer) and its
Chinese words in content/design/zh-CN/. The numbers a round's prose states are either its
inputs or figures the calculators compute (app/quiz/design_sheet.py fills the {placeholders}
of FIGURES), so no figure is typed twice. A round naming an unknown preset, card or
placeholder stops the app at load, as a broken card does.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.calc.gpus import GPUS
from app.calc.hardware import ACCELERATORS
from app.calc.model import PRESETS
from app.quiz.layouts import Scenario, request_for
from app.yaml_text import load_yaml

Kind = Literal["training", "serving"]
LEVELS = ("junior", "mid", "senior")
# Precisions a serving round may ask for: those app.calc.inference counts bytes for and
# app.calc.hardware has a peak for (the decode roofline's compute bound).
ServingDtype = Literal["bf16", "fp8"]

# The figures a round's prose may name, per kind, filled in by design_sheet.round_figures from
# the scenario and the calculators.
FIGURES: dict[str, frozenset[str]] = {
    "training": frozenset({
        "model", "params_b", "gpus", "nodes", "accelerator", "capacity_gb", "batch_tokens",
        "seq_len", "token_budget_b", "deadline_days", "budget_gpu_hours", "afr_pct",
        "storage_gb_s", "restart_min", "best_layout", "best_degrees", "memory_gb", "step_s",
        "mfu_pct", "days", "gpu_hours", "checkpoint_gb", "write_s", "node_mtbf_h",
        "job_mtbf_h", "young_min", "daly_min", "goodput_pct",
    }),
    "serving": frozenset({
        "model", "params_b", "gpus", "gpus_per_node", "gpu", "capacity_gb", "budget_gb",
        "context", "concurrent", "weight_dtype", "kv_dtype", "tp", "replicas",
        "seqs_per_replica", "kv_kb_per_token", "weights_gb", "kv_gb", "total_gb", "decode_ms",
        "tokens_per_s", "largest_batch",
    }),
}  # fmt: skip


# The figures of FIGURES that need no plan: the only ones a title may name (the list of rounds
# shows every title, and planning them all would hold that page up).
INPUT_FIGURES: dict[str, frozenset[str]] = {
    "training": frozenset({
        "model", "params_b", "gpus", "nodes", "accelerator", "capacity_gb", "batch_tokens",
        "seq_len", "token_budget_b", "deadline_days", "budget_gpu_hours", "afr_pct",
        "storage_gb_s", "restart_min",
    }),
    "serving": frozenset({
        "model", "params_b", "gpus", "gpus_per_node", "gpu", "capacity_gb", "context",
        "concurrent", "weight_dtype", "kv_dtype",
    }),
}  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrainingInputs(_Strict):
    """A training job: the model, the cluster, the batch, what it must do and how it fails."""

    model: str
    accelerator: str = "h100-sxm"
    gpu: str = "h100-80gb"
    intra_node: str = "nvlink4"
    inter_node: str = "ib-ndr"
    nodes: int = Field(ge=1, le=64)  # of 8 GPUs; a plan of 512 GPUs takes seconds
    global_batch_tokens: int = Field(ge=1)
    seq_len: int = Field(ge=1)
    token_budget: float = Field(gt=0)  # tokens to train on
    deadline_days: float = Field(gt=0)
    budget_gpu_hours: float = Field(gt=0)
    node_afr_percent: float = Field(gt=0)  # failures per node-year, as a percentage
    checkpoint_gb_per_s: float = Field(gt=0)  # aggregate write bandwidth to storage
    restart_minutes: float = Field(ge=0)  # to notice a failure, reschedule and reload

    @property
    def scenario(self) -> Scenario:
        return Scenario(self.model, self.nodes, self.global_batch_tokens, self.seq_len,
                        self.accelerator, self.gpu, self.intra_node, self.inter_node)  # fmt: skip

    @model_validator(mode="after")
    def _the_planner_takes_it(self) -> TrainingInputs:
        request_for(self.scenario, self.token_budget)  # unknown presets, a ragged batch
        return self


class ServingInputs(_Strict):
    """A service: the model, the GPUs it has, the context and the sequences held at once."""

    model: str
    accelerator: str = "h100-sxm"  # peak and HBM bandwidth for the decode roofline
    gpu: str = "h100-80gb"  # memory capacity
    gpus: int = Field(ge=1, le=1024)
    gpus_per_node: int = Field(default=8, ge=1, le=64)  # TP stays inside a node
    context: int = Field(ge=1)  # tokens per sequence held in the KV cache
    concurrent: int = Field(ge=1)  # sequences held at once, all replicas together
    weight_dtype: ServingDtype = "bf16"
    kv_dtype: ServingDtype = "bf16"

    @model_validator(mode="after")
    def _known_presets(self) -> ServingInputs:
        for slug, table in ((self.model, PRESETS), (self.accelerator, ACCELERATORS),
                            (self.gpu, GPUS)):  # fmt: skip
            if slug not in table:
                raise ValueError(f"unknown preset {slug!r}; choose one of {', '.join(table)}")
        return self


class RoundWords(_Strict):
    """What a round says, in one language; {placeholders} are FIGURES."""

    title: str = Field(min_length=1, max_length=120)
    brief: str = Field(min_length=1)
    model_answer: str = Field(min_length=1)
    watch: list[str] = Field(min_length=3, max_length=5)  # what to monitor: a rubric to tick
    next_questions: list[str] = Field(min_length=2, max_length=3)


class DesignRound(RoundWords):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{2,79}$")
    kind: Kind
    level: Literal["junior", "mid", "senior"]
    card: str  # the card it practises most (content/cards)
    training: TrainingInputs | None = None
    serving: ServingInputs | None = None
    # Other languages' words (content/design/zh-CN/<id>.yaml), by language code.
    editions: dict[str, RoundWords] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _inputs_of_its_kind(self) -> DesignRound:
        if (self.kind == "training") != (self.training is not None) or (self.kind == "serving") != (
            self.serving is not None
        ):
            raise ValueError(f"a {self.kind} round has `{self.kind}:` inputs and no others")
        return self

    @property
    def model_preset(self) -> str:
        inputs = self.training or self.serving
        assert inputs is not None
        return inputs.model

    def words(self, lang: str) -> RoundWords:
        """The round's words in `lang`, English where it has no edition."""
        return self.editions.get(lang, self)


def _placeholders(*texts: str) -> set[str]:
    return {name for text in texts for _, name, _, _ in string.Formatter().parse(text) if name}


def placeholder_problems(kind: str, words: RoundWords) -> list[str]:
    """Placeholders that name no figure of the round's kind, or that a title cannot name."""
    texts = [words.brief, words.model_answer, *words.watch, *words.next_questions]
    problems = [f"unknown placeholder {{{name}}}"
                for name in sorted(_placeholders(*texts) - FIGURES[kind])]  # fmt: skip
    problems += [f"the title names {{{name}}}, which needs a plan"
                 for name in sorted(_placeholders(words.title) - INPUT_FIGURES[kind])]  # fmt: skip
    return problems


class DesignRoundError(ValueError):
    pass


class DesignRounds:
    """The bank of rounds, in the order the list shows them: training first, junior first."""

    def __init__(self, rounds: Iterable[DesignRound]) -> None:
        order = {level: i for i, level in enumerate(LEVELS)}
        self._rounds = sorted(rounds, key=lambda r: (r.kind != "training", order[r.level], r.id))
        self._by_id = {r.id: r for r in self._rounds}

    def all(self) -> list[DesignRound]:
        return list(self._rounds)

    def get(self, round_id: str) -> DesignRound | None:
        return self._by_id.get(round_id)

    @classmethod
    def load(cls, folder: Path, card_ids: Iterable[str]) -> DesignRounds:
        """Every round in `folder` with its editions (no folder: no rounds); a problem in any
        stops the load with every problem named."""
        if not folder.is_dir():
            return cls([])
        cards, rounds, problems = set(card_ids), [], []
        for path in sorted(folder.glob("*.yaml")):
            try:
                data = load_yaml(path.read_text(encoding="utf-8"))
                edition = folder / "zh-CN" / path.name
                if edition.exists():
                    zh = load_yaml(edition.read_text(encoding="utf-8"))
                    data["editions"] = {"zh": {k: v for k, v in zh.items() if k != "id"}}
                round_ = DesignRound.model_validate(data)
            except (yaml.YAMLError, ValidationError, TypeError, ValueError) as exc:
                problems.append(f"{path.name}: {exc}")
                continue
            if round_.id != path.stem:
                problems.append(f"{path.name}: its id is {round_.id!r}, not the file's name")
            if round_.card not in cards:
                problems.append(f"{path.name}: no card {round_.card!r}")
            for words in (round_, *round_.editions.values()):
                problems += [f"{path.name}: {p}" for p in placeholder_problems(round_.kind, words)]
                if len(words.watch) != len(round_.watch):
                    problems.append(f"{path.name}: an edition's watch list is not the English's")
            rounds.append(round_)
        stray = {p.name for p in (folder / "zh-CN").glob("*.yaml")} - {
            p.name for p in folder.glob("*.yaml")
        }
        problems += [f"zh-CN/{name}: no English round of that name" for name in sorted(stray)]
        if problems:
            raise DesignRoundError("; ".join(problems))
        return cls(rounds)

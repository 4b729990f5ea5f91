"""`python -m app.calc memory`: the same numbers from the shell, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app.calc.__main__ import main
from app.calc.memory import model_states_per_gpu


def test_json_output_matches_the_calculator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "--params", "7.5e9", "--dp-degree", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["total_bytes"] for s in out["stages"]] == [
        model_states_per_gpu(7.5e9, 64, stage).total_bytes for stage in range(4)
    ]


def test_table_output_shows_figure_1(capsys: pytest.CaptureFixture[str]) -> None:
    main(["memory", "--params", "7.5e9", "--dp-degree", "64", "--stage", "1"])
    assert "31.41" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["--params", "-1", "--dp-degree", "8"],
        ["--params", "x", "--dp-degree", "8"],
        ["--params", "1e9", "--dp-degree", "0"],
        ["--params", "1e9", "--dp-degree", "8", "--stage", "5"],
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["memory", *args])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_runs_as_a_module_with_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.calc", "memory", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--dp-degree" in result.stdout and "ZeRO" in result.stdout


def test_full_mode_prints_every_term_and_a_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["memory", "--preset", "llama3-70b", "--dp", "4", "--tp", "8", "--pp", "2",
            "--zero-stage", "1", "--recompute", "selective", "--seq-len", "8192"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    for label in ("Weights", "Gradients", "Master weights", "Optimizer states", "Activations"):
        assert label in out
    assert "70,553,706,496 parameters" in out
    assert "largest micro-batch that fits" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--tp", "3"], "must divide the attention heads"),
     (["--dp", "0"], "--dp: Input should be greater than or equal to 1"),
     (["--recompute", "sometimes"], "--recompute"),
     (["--preset", "gpt-5"], "--preset")],
)  # fmt: skip
def test_full_mode_bad_arguments_exit_2(args: list[str], message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(["memory", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_full_calculators_options() -> None:
    result = subprocess.run([sys.executable, "-m", "app.calc", "memory", "--help"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    for option in ("--preset", "--tp", "--zero-stage", "--recompute", "--gpu", "--unit"):
        assert option in result.stdout

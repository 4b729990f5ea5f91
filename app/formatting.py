"""How numbers are shown: the one place that turns raw units into text and LaTeX."""

from __future__ import annotations

import math
from fractions import Fraction

from app.calc.units import GB, MEMORY_UNITS


def gb_value(n_bytes: float, digits: int = 2) -> str:
    """Bytes as a decimal-gigabyte figure without the unit, e.g. '31.41'."""
    return f"{n_bytes / GB:,.{digits}f}"


def gb(n_bytes: float, digits: int = 2) -> str:
    """Bytes as decimal gigabytes, e.g. '31.41 GB'."""
    return f"{gb_value(n_bytes, digits)} GB"


def bytes_human(n_bytes: float) -> str:
    """Bytes in binary units, exact for the sizes demos use (e.g. '4 MiB', '6.25 KiB')."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:,.6g} {unit}"
    return f"{n_bytes:,.0f} B"


def count_short(value: float) -> str:
    """A parameter count the way papers write it: 7.5 B, 175 B, 1.3 T, 350 M."""
    for suffix, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.4g} {suffix}"
    return f"{value:.4g}"


def input_value(value: object) -> str:
    """A form field's value as a person types it: 300000000000, not Python's 300000000000.0;
    other floats in their shortest exact form, so a submitted form round-trips."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value)


def latex_number(value: float, digits: int = 4) -> str:
    """A number for KaTeX: 7.5e9 becomes 7.5 \\times 10^{9}; small ones stay plain."""
    if not math.isfinite(value):
        return r"\infty" if value > 0 else (r"-\infty" if value < 0 else r"\text{NaN}")
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        text = f"{value:.{digits}g}"
        # `g` turns to e-notation from 10**digits up (50000 -> 5e+04): keep these plain.
        return f"{float(text):.0f}" if "e" in text else text
    # Split Python's own e-notation: exact for subnormal floats, where 10**exponent is 0.
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{float(mantissa):.{digits}g} \\times 10^{{{int(exponent)}}}"


def latex_int(value: float) -> str:
    """A whole number with KaTeX-safe thousands separators: 65536 becomes 65{,}536."""
    return f"{value:,.0f}".replace(",", "{,}")


def latex_fraction(value: Fraction, command: str = r"\frac") -> str:
    """An exact ratio for KaTeX: 3/2 becomes \frac{3}{2}, 2/1 becomes 2."""
    if value.denominator == 1:
        return str(value.numerator)
    return rf"{command}{{{value.numerator}}}{{{value.denominator}}}"


def memory(n_bytes: float, unit: str = "GB", digits: int = 2) -> str:
    """Bytes in the unit the page shows: decimal GB (10^9) or binary GiB (2^30)."""
    return f"{n_bytes / MEMORY_UNITS[unit]:,.{digits}f} {unit}"


def mastery_percent(fraction: float | None) -> str:
    """Mastery (app.quiz.progress.mastery_of) as '62%'; '–' when no question has been answered.
    A filter, not a macro: the progress page shows one for every card."""
    return "–" if fraction is None else f"{round(100 * fraction)}%"

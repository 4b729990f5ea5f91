"""Cards and quiz prompts as plain text, for the search index and its snippets.

A snippet is a window of a few words cut out of the text wherever the match falls, so it
cannot carry markup: half a formula does not render, and <mark> cannot go inside KaTeX. So
math is written out the way the cards' own front matter writes it in plain text ("16Ψ",
"N_d = 64"): Greek letters and operators as Unicode, \\frac as a slash, digits in
superscripts as superscripts, a sub- or superscript of more than one term in brackets
(P_(os+g)). Markdown keeps its words only, a mermaid diagram the words of its labels, and an
```example block (calculator inputs, rendered as tables on the card) nothing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from app.cards.markdown_dialect import card_markdown

SYMBOLS = {
    "times": "×", "cdot": "·", "approx": "≈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "ne": "≠", "neq": "≠", "ll": "≪", "gg": "≫", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "Rightarrow": "⇒", "infty": "∞", "partial": "∂", "nabla": "∇",
    "top": "⊤", "sum": "Σ", "prod": "∏", "pm": "±", "div": "÷", "sim": "~", "propto": "∝",
    "in": "∈", "equiv": "≡", "ldots": "…", "dots": "…", "cdots": "…", "mid": "|",
    "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋", "quad": " ", "qquad": " ",
    "varepsilon": "ε", "varphi": "φ", "vartheta": "θ",
}  # fmt: skip
# Commands whose argument is plain words, or a letter under an accent the snippet drops.
KEEP_ARGUMENT = {"text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathbb",
                 "mathcal", "boldsymbol", "operatorname", "textrm", "textbf", "textit",
                 "hat", "bar", "tilde", "vec", "overline", "widehat"}  # fmt: skip
# Sizing and spacing that have no words: dropped (the delimiter after \left stays).
DROP = {"left", "right", "big", "Big", "bigl", "bigr", "Bigl", "Bigr", "displaystyle",
        "limits", "nolimits", "!"}  # fmt: skip
SUPERSCRIPT = str.maketrans("0123456789+-=()ni⊤", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵀ")
_LATEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.DOTALL)
# Marks where a sub- or superscript ends: a space if a letter follows ("N_d Ψ"), else nothing.
_SCRIPT_END = "\x00"


def latex_text(tex: str) -> str:
    """A formula as plain text: $3m\\frac{N_d-1}{N_d}\\Psi$ reads 3m(N_d-1)/N_d Ψ."""
    text, _ = _group(_LATEX_TOKEN.findall(tex), 0)
    text = re.sub(f"{_SCRIPT_END}(?=\\w)", " ", text).replace(_SCRIPT_END, "")
    lines = (" ".join(line.split()) for line in text.split(";"))  # aligned rows end in \\\\
    return "; ".join(line for line in lines if line)


def _group(tokens: list[str], pos: int) -> tuple[str, int]:
    """The text of the tokens from pos up to the closing brace of this group (or the end)."""
    out: list[str] = []
    while pos < len(tokens):
        token, pos = tokens[pos], pos + 1
        if token == "}":
            break
        if token == "{":
            text, pos = _group(tokens, pos)
        elif token in "^_":
            arg, pos = _argument(tokens, pos)
            text = _script(token, arg)
        elif token.startswith("\\"):
            text, pos = _command(token[1:], tokens, pos)
        else:
            text = {"&": "", "~": " "}.get(token, token)
        out.append(text)
    return "".join(out), pos


def _argument(tokens: list[str], pos: int) -> tuple[str, int]:
    """The next argument: a {group}, one command, or one character."""
    while pos < len(tokens) and tokens[pos].isspace():
        pos += 1
    if pos >= len(tokens):
        return "", pos
    if tokens[pos] == "{":
        return _group(tokens, pos + 1)
    if tokens[pos].startswith("\\"):
        return _command(tokens[pos][1:], tokens, pos + 1)
    return tokens[pos], pos + 1


def _command(name: str, tokens: list[str], pos: int) -> tuple[str, int]:
    if name in ("frac", "tfrac", "dfrac"):
        numerator, pos = _argument(tokens, pos)
        denominator, pos = _argument(tokens, pos)
        return f"{_operand(numerator)}/{_operand(denominator)}", pos
    if name == "sqrt":
        arg, pos = _argument(tokens, pos)
        return f"√{_operand(arg)}", pos
    if name in KEEP_ARGUMENT:
        return _argument(tokens, pos)
    if name in ("begin", "end"):
        return "", _argument(tokens, pos)[1]
    if name in ("underbrace", "overbrace"):
        arg, pos = _argument(tokens, pos)
        if pos < len(tokens) and tokens[pos] in "_^":
            label, pos = _argument(tokens, pos + 1)
            return f"{arg} ({label})", pos
        return arg, pos
    if name in DROP:
        return "", pos
    if name == "\\":
        return "; ", pos
    if len(name) == 1:  # \, \; \: \  are spaces; \% \$ \{ and the like are the character
        return " " if name in ",;: " else name, pos
    return SYMBOLS.get(name) or _greek(name) or name, pos  # \log, \max: the word itself


@cache
def _greek(name: str) -> str:
    case = "CAPITAL" if name[0].isupper() else "SMALL"
    try:
        # Unicode spells lambda without the b.
        return unicodedata.lookup(f"GREEK {case} LETTER {name.upper().replace('MB', 'M')}")
    except KeyError:
        return ""


def _operand(text: str) -> str:
    """Parenthesised where it holds an operator or a space, so a/b stays unambiguous."""
    bare = text.replace(_SCRIPT_END, "").strip()
    return f"({bare})" if re.search(r"[\s+\-−×·/=<>≈,;]", bare) else text.strip()


def _script(mark: str, arg: str) -> str:
    bare = arg.replace(_SCRIPT_END, "").strip()
    if mark == "^" and bare and all(c in "0123456789+-=()ni⊤" for c in bare):
        return bare.translate(SUPERSCRIPT)
    return f"{mark}{_operand(arg)}{_SCRIPT_END}"


@cache
def _markdown() -> MarkdownIt:
    return card_markdown()


@lru_cache(maxsize=2048)
def markdown_text(source: str) -> str:
    """The words of a Markdown text, one line per block (paragraph, heading, table cell).
    Cached: every app started in a process (the tests start many) indexes the same cards."""
    lines = [_block_text(token) for token in _markdown().parse(source)]
    return "\n".join(line for line in lines if line.strip())


def _block_text(token: Token) -> str:
    if token.type == "inline":
        return "".join(_inline_text(child) for child in token.children or [])
    if token.type in ("math_block", "math_block_label"):
        return latex_text(token.content)
    if token.type == "fence":
        kind = token.info.strip().split(" ")[0]
        if kind == "mermaid":
            return mermaid_text(token.content)
        return "" if kind == "example" else " ".join(token.content.split())
    if token.type == "code_block":
        return " ".join(token.content.split())
    return ""


def _inline_text(token: Token) -> str:
    if token.type in ("text", "code_inline"):
        return token.content
    if token.type in ("math_inline", "math_inline_double"):
        return latex_text(token.content)
    if token.type in ("softbreak", "hardbreak"):
        return " "
    if token.type == "image":
        return "".join(_inline_text(child) for child in token.children or [])
    return ""  # emphasis and link marks, footnote references


# A diagram's words: quoted labels, [bracketed] and (rounded) node labels, |edge| labels,
# the text after a sequence diagram's "A->>B:" or "Note over A:", and participants' names.
_MERMAID_LABEL = re.compile(
    r'"([^"]+)"|\[([^\]"]+)\]|\(([^)"]+)\)|\|([^|"]+)\||'
    r"(?:->>|-->>|->|-x|--x|-\)|Note [^:]+):\s*(.+)|participant \w+ as (.+)"
)


def mermaid_text(diagram: str) -> str:
    labels = [next(g for g in m.groups() if g) for m in _MERMAID_LABEL.finditer(diagram)]
    words = [" ".join(re.sub(r"<br\s*/?>|#quot;", " ", label).strip('"').split())
             for label in labels]  # fmt: skip
    return "; ".join(w for w in words if w)

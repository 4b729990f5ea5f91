"""The house's layers, read from its imports (docs/architecture.md, "Layers"; issue #26).

Every .py file under app/, demos/, bench/ and scripts/ is parsed, never imported, and three
rules are checked on what it imports:

- a layer imports only what LAYERS lets it stand on: app/calc is the ground floor;
- no module imports a private name (`_x`; a dunder such as `__version__` is public) of another
  package, a package being the directory a module is in: app.quiz.bank may import
  app.quiz._x, app.quiz.generators.compute may not import app.calculators.compute_router._x;
- no import circles between modules.

Every import statement counts, wherever it stands: at the top; inside a function, since a
deferred import is still a dependency (app.quiz.bank imported app.quiz.editions inside
QuestionBank.load while editions imported bank: a circle all the same); and under
`if TYPE_CHECKING:`, since a dependency of the types is one too. An import counts towards the
module it names, not that module's parent packages: `import a.b.c` runs a/__init__.py as well,
but counting that would make a circle of every package whose __init__ imports a submodule.
Modules imported by a name built at run time (importlib) are not seen. Imports from outside
the house (the standard library, pydantic, torch) are checked only against LAYERS' `never`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import ROOT_DIR

ROOTS = ("app", "demos", "bench", "scripts")
WEB_DB_TORCH = ("fastapi", "starlette", "jinja2", "sqlmodel", "sqlalchemy", "torch")


@dataclass(frozen=True)
class Layer:
    may_import: tuple[str, ...]  # of the house's modules, only these and what is under them
    never: tuple[str, ...] = ()  # packages from outside the house it never imports


# Who may import whom; a module follows the longest key it is under. The rest of the house
# may import anything below it: the rules below keep those arrows from forming a circle.
LAYERS = {
    # The oracle: pure numbers, so the CLI, the demos and every page share one formula.
    "app.calc": Layer(may_import=("app.calc",), never=WEB_DB_TORCH),
    # Worked explanations (formulas with the user's numbers, term labels, stage views, Gantt):
    # the numbers, translated words and their formatting; no page, router or request.
    "app.worked": Layer(
        may_import=("app.calc", "app.i18n", "app.formatting", "app.worked"), never=WEB_DB_TORCH
    ),
    # The worker side: torch, and app.calc for its predictions and messages; never the web app.
    "demos": Layer(
        may_import=("demos", "app.calc"), never=("fastapi", "starlette", "jinja2", "sqlmodel")
    ),
}


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, dotted
    where: str  # its file and the import's line, as a failure names it
    module: str  # the module imported from, dotted and absolute
    name: str | None = None  # the name taken from it (`from module import name`), if not a module

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


@dataclass(frozen=True, repr=False)
class House:
    modules: dict[str, Path]  # dotted name -> file (a package's __init__.py)
    packages: frozenset[str]  # the directories that hold modules, dotted
    imports: list[Import]

    def __repr__(self) -> str:  # what a failing test prints of its fixture
        return f"House({len(self.modules)} modules, {len(self.imports)} imports)"

    def package_of(self, module: str) -> str:
        """The directory a module is in (a package's __init__ is in the package itself)."""
        return module if self.modules[module].name == "__init__.py" else _parent(module)


def read_house(root: Path, roots: tuple[str, ...] = ROOTS) -> House:
    files = sorted(
        f for r in roots for f in (root / r).rglob("*.py") if "__pycache__" not in f.parts
    )
    modules = {_dotted(f.relative_to(root)): f for f in files}
    packages = frozenset(".".join(f.parent.relative_to(root).parts) for f in files)
    imports = []
    for name, path in modules.items():
        where = path.relative_to(root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(where))
        for node in sorted(ast.walk(tree), key=lambda node: getattr(node, "lineno", 0)):
            for module, taken in _named(node, name, path, modules):
                imported = Import(name, f"{where}:{node.lineno}", module, taken)
                if taken and imported.dotted in modules:  # `from package import submodule`
                    imported = Import(name, imported.where, imported.dotted)
                imports.append(imported)
    return House(modules, packages, imports)


def _dotted(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parent(dotted: str) -> str:
    return dotted.rpartition(".")[0]


def _named(node: ast.AST, importer: str, path: Path, modules: dict[str, Path]
           ) -> list[tuple[str, str | None]]:  # fmt: skip
    """(module, name or None) for each thing an import statement imports, absolute."""
    if isinstance(node, ast.Import):
        return [(_beside(alias.name, importer, path, modules), None) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: up from the directory the importer is in
        base = importer if path.name == "__init__.py" else _parent(importer)
        for _ in range(node.level - 1):
            base = _parent(base)
        module = f"{base}.{node.module}" if node.module else base
    else:
        module = _beside(node.module or "", importer, path, modules)
    # `from m import *` imports m, and no name the rules could call private.
    return [(module, None if alias.name == "*" else alias.name) for alias in node.names]


def _beside(module: str, importer: str, path: Path, modules: dict[str, Path]) -> str:
    """A script outside a package (bench/) imports its neighbours by their bare names, since
    Python puts the script's directory first on sys.path."""
    if (path.parent / "__init__.py").exists():
        return module
    neighbour = f"{_parent(importer)}.{module}"
    return neighbour if module not in modules and neighbour in modules else module


def _under(dotted: str, prefixes: tuple[str, ...]) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in prefixes)


def layer_breaches(house: House, layers: dict[str, Layer], roots: tuple[str, ...] = ROOTS
                   ) -> list[str]:  # fmt: skip
    breaches = []
    for imp in house.imports:
        keys = [key for key in layers if _under(imp.importer, (key,))]
        if not keys:
            continue
        key = max(keys, key=len)
        layer = layers[key]
        if _under(imp.module, layer.never):
            breaches.append(f"{imp.where}: {imp.importer} imports {imp.dotted}; {key} never "
                            f"imports {', '.join(layer.never)}")  # fmt: skip
        elif imp.module.split(".")[0] in roots and not _under(imp.module, layer.may_import):
            breaches.append(f"{imp.where}: {imp.importer} imports {imp.dotted}; {key} may "
                            f"import only {', '.join(layer.may_import)}")  # fmt: skip
    return breaches


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def private_imports(house: House, roots: tuple[str, ...] = ROOTS) -> list[str]:
    found = []
    for imp in house.imports:
        parts = imp.dotted.split(".")
        if parts[0] not in roots or not any(map(_private, parts)):
            continue
        first = next(i for i, part in enumerate(parts) if _private(part))
        holder = ".".join(parts[:first])
        # A private module or name belongs to the package it lies in.
        owner = holder if holder in house.packages else _parent(holder)
        if owner != house.package_of(imp.importer):
            found.append(f"{imp.where}: {imp.importer} imports {imp.dotted}, private to {owner}")
    return found


def import_cycles(house: House) -> list[str]:
    """Each circle (a strongly connected component of two or more modules), with the imports
    that close it."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for imp in house.imports:
        if imp.module in house.modules and imp.module != imp.importer:
            edges[imp.importer][imp.module].append(imp.where)
    circles = []
    for component in _strongly_connected(list(house.modules), edges):
        if len(component) > 1:
            lines = [f"  {where}: {a} imports {b}" for a in sorted(component)
                     for b in sorted(set(edges[a]) & component)
                     for where in dict.fromkeys(edges[a][b])]  # fmt: skip
            around = " → ".join(_shortest_circle(component, edges))
            circles.append(f"circle of {len(component)} modules, such as {around}; the imports "
                           "between them:\n" + "\n".join(lines))  # fmt: skip
    return circles


def _shortest_circle(component: set[str], edges: dict[str, dict[str, list[str]]]) -> list[str]:
    """The shortest way from the component's first module back to itself (breadth first)."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while start not in came_from:
        following = []
        for node in frontier:
            for step in sorted(set(edges[node]) & component):
                if step not in came_from:
                    came_from[step] = node
                    following.append(step)
        frontier = following
    path = [start]
    while len(path) == 1 or path[-1] != start:
        path.append(came_from[path[-1]])
    return path[::-1]


def _strongly_connected(nodes: list[str], edges: dict[str, dict[str, list[str]]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit to meet on a long chain of imports)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, following = work[-1]
            step = next(following, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(edges[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


@pytest.fixture(scope="module")
def house() -> House:
    return read_house(ROOT_DIR)


def test_each_layer_imports_only_what_it_stands_on(house: House) -> None:
    breaches = layer_breaches(house, LAYERS)
    assert not breaches, "\n".join(breaches)


def test_no_module_imports_a_private_name_of_another_package(house: House) -> None:
    found = private_imports(house)
    assert not found, "\n".join(found)


def test_no_import_circles(house: House) -> None:
    circles = import_cycles(house)
    assert not circles, "\n".join(circles)


def test_the_house_is_read_whole(house: House) -> None:
    """The rules above would pass on a house read wrong: it has the modules and arrows we know
    of (a function's imports are checked on the small house below)."""
    arrows = {(imp.importer, imp.module) for imp in house.imports}
    assert {"app.calc.memory", "app.quiz.bank", "demos.specs", "bench.gpu_check"} <= set(
        house.modules
    )
    assert ("app.quiz.bank", "app.quiz.editions") in arrows
    assert ("bench.gpu_check", "bench.demo_checks") in arrows  # a script's bare-name neighbour
    assert ("app.quiz.items", "app.i18n") in arrows


CLEAN = {
    "pkg/__init__.py": "",
    "pkg/floor/__init__.py": "",
    "pkg/floor/_rounding.py": "def half(x):\n    return x / 2\n",
    "pkg/floor/numbers.py": (
        "from pkg.floor._rounding import half\nfrom pkg.floor import __doc__ as DOC\n_SCALE = 2\n"
    ),
    "pkg/rooms/__init__.py": "",
    "pkg/rooms/a.py": "from pkg.floor.numbers import half\nfrom . import b\n",
    "pkg/rooms/b.py": "import pkg.floor.numbers\n",
}
TEST_LAYERS = {"pkg.floor": Layer(may_import=("pkg.floor",), never=("fastapi",))}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_checks_report_a_private_import_a_circle_and_a_layer_breach(tmp_path: Path) -> None:
    write(tmp_path, CLEAN)
    house = read_house(tmp_path, ("pkg",))
    assert private_imports(house, ("pkg",)) == []  # the same package's, and a dunder
    assert import_cycles(house) == []
    assert layer_breaches(house, TEST_LAYERS, ("pkg",)) == []

    write(tmp_path, {
        "pkg/rooms/page.py": (
            "from pkg.floor._rounding import half\nfrom pkg.floor.numbers import _SCALE\n"
        ),
        # b imports a inside a function, as bank imported editions: a circle all the same
        "pkg/rooms/b.py": (
            "import pkg.floor.numbers\n\n\ndef load():\n    from pkg.rooms.a import half\n"
        ),
        "pkg/floor/up.py": "import fastapi\nfrom pkg.rooms import a\n",
    })  # fmt: skip
    house = read_house(tmp_path, ("pkg",))
    page = "pkg/rooms/page.py:{}: pkg.rooms.page imports pkg.floor.{}, private to pkg.floor"
    assert private_imports(house, ("pkg",)) == [
        page.format(1, "_rounding.half"),
        page.format(2, "numbers._SCALE"),
    ]
    assert import_cycles(house) == [
        "circle of 2 modules, such as pkg.rooms.a → pkg.rooms.b → pkg.rooms.a; the imports "
        "between them:\n"
        "  pkg/rooms/a.py:2: pkg.rooms.a imports pkg.rooms.b\n"
        "  pkg/rooms/b.py:5: pkg.rooms.b imports pkg.rooms.a"
    ]
    assert layer_breaches(house, TEST_LAYERS, ("pkg",)) == [
        "pkg/floor/up.py:1: pkg.floor.up imports fastapi; pkg.floor never imports fastapi",
        "pkg/floor/up.py:2: pkg.floor.up imports pkg.rooms.a; pkg.floor may import only pkg.floor",
    ]


# A module longer than this says at its top why it is one module (issue #26): a paragraph of
# its docstring that starts "One module because" or, for a script, "One file because".
LONGEST_WITHOUT_A_REASON = 400
REASON_STARTS = ("One module because", "One file because")


def test_a_long_module_says_why_it_is_one() -> None:
    unexplained = []
    for root in ROOTS:
        for path in sorted((ROOT_DIR / root).rglob("*.py")):
            text = path.read_text()
            if text.count("\n") <= LONGEST_WITHOUT_A_REASON:
                continue
            paragraphs = (ast.get_docstring(ast.parse(text)) or "").split("\n\n")
            if not any(p.startswith(REASON_STARTS) for p in paragraphs):
                unexplained.append(f"{path.relative_to(ROOT_DIR)}: {text.count(chr(10))} lines")
    assert not unexplained, "split these, or say at their top why each is one module:\n" + (
        "\n".join(unexplained)
    )

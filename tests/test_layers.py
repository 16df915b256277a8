"""The layers hold (docs/architecture.md): no module imports, at module level, from a layer above
its own, and the module-level imports between ragraf's modules form no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import ragraf

SRC = Path(ragraf.__file__).parent

# Lowest first. A module may import its own layer and those below it; function-level imports
# (loaded when used) and TYPE_CHECKING blocks are not bound by this.
LAYERS: list[tuple[str, ...]] = [
    (
        "ragraf.errors",
        "ragraf.lazy",
        "ragraf.tokens",
        "ragraf.languages",
        "ragraf.header_language",
        "ragraf.grammar_input",
    ),
    ("ragraf.config", "ragraf.corpus", "ragraf.chunking"),
    ("ragraf.store", "ragraf.embed"),
    ("ragraf.facts", "ragraf.freshness"),
    ("ragraf.search", "ragraf.index"),
    ("ragraf.api", "ragraf"),  # the package itself re-exports Index
    ("ragraf.adapters",),
    ("ragraf.cli",),
]


def module_name(path: Path, src: Path = SRC) -> str:
    parts = ("ragraf", *path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    best = max(
        ((len(prefix), i) for i, names in enumerate(LAYERS) for prefix in names
         if module == prefix or module.startswith(prefix + ".")),
        default=None,
    )  # fmt: skip
    assert best is not None, f"{module} is in no layer: add it to LAYERS and docs/architecture.md"
    return best[1]


def module_imports(path: Path, src: Path = SRC) -> set[str]:
    """The ragraf modules a module imports when it is loaded (top level, try/except included)."""
    name = module_name(path, src)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.Try):
            body.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                body.extend(handler.body)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "ragraf")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != "ragraf":
                continue
            found.add(target)
            for alias in node.names:  # `from ragraf.api import index` loads the module ragraf.api.index
                sub = src.parent.joinpath(*f"{target}.{alias.name}".split("."))
                if sub.with_suffix(".py").exists() or sub.is_dir():
                    found.add(f"{target}.{alias.name}")
    return found


def import_graph() -> dict[str, set[str]]:
    return {module_name(p): module_imports(p) for p in sorted(SRC.rglob("*.py"))}


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in import_graph().items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_module_level_imports_form_no_cycle() -> None:
    graph = import_graph()
    # A package's __init__ importing its own modules is how a package re-exports; the cycle that
    # matters is a module that needs, while it loads, a module that needs it back.
    edges = {
        m: {t for t in ts if t in graph and t != m and not m.startswith(t + ".")} for m, ts in graph.items()
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert cycles == []


def test_the_checks_read_module_level_imports_only(tmp_path: Path) -> None:
    src = tmp_path / "ragraf"
    (src / "store").mkdir(parents=True)
    (src / "api").mkdir()
    (src / "api" / "index.py").write_text("")
    (src / "store" / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ragraf.errors import RagrafError\n"
        "from ..api import index\n"
        "try:\n    import ragraf.search.rank\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from ragraf.adapters import tools\n"
        "def later():\n    from ragraf.cli import main\n"
    )
    found = module_imports(src / "store" / "low.py", src)
    assert found == {"ragraf.errors", "ragraf.api", "ragraf.api.index", "ragraf.search.rank"}
    assert [layer_of(m) > layer_of("ragraf.store.low") for m in sorted(found)] == [True, True, False, True]

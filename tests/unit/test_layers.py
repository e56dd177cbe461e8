"""The top-level packages form layers: protocol <- clients <- controller <- broker <- tools.

Each package may import only the packages below it (the Spark connector sits on the clients). The
imports are read from the code itself (every ``import``/``from`` statement, in functions and under
TYPE_CHECKING too), so a new file or a new import is checked without a list to keep up to date.
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> the packages it may import (besides itself)
ALLOWED = {
    "protocol": set(),
    "clients": {"protocol"},
    "controller": {"protocol", "clients"},
    "broker": {"protocol", "clients", "controller"},
    "tools": {"protocol", "clients", "controller", "broker"},
    "spark_connector": {"protocol", "clients"},
    "pyspark_odradek": {"spark_connector"},
}


def _module_parts(path: Path, root: Path) -> list[str]:
    """The dotted module name: the packages are installed under ``odradek.`` (pyspark_odradek at the top)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    parts = parts if parts[0] == "pyspark_odradek" else ["odradek"] + parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_packages(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, top-level package) for every import of one of ours in a file."""
    parts = _module_parts(path, root)
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                keep = len(package) - node.level + 1
                base = package[:keep] if keep > 0 else []
                if not base:  # climbs out of the package tree
                    found.append((node.lineno, "<outside>"))
                    continue
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")
            if top[0] == "odradek" and len(top) > 1:
                found.append((node.lineno, top[1]))
            elif top[0] in ALLOWED:
                found.append((node.lineno, top[0]))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_layers_below_it(package):
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, target in imported_packages(path):
            if target != package and target not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package]) or 'nothing of ours'}:\n" + \
        "\n".join(wrong)


def test_the_check_sees_relative_and_absolute_imports(tmp_path):
    """The reader resolves both forms, so the layer test cannot pass by missing an import."""
    probe = tmp_path / "clients" / "group" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from ...broker import config\nfrom . import assignors\nimport odradek.tools.topics\n"
                     "def f():\n    from .....x import y\n")
    assert imported_packages(probe, tmp_path) == [(1, "broker"), (2, "clients"), (3, "tools"), (5, "<outside>")]


def test_every_source_package_is_covered():
    """A new top-level package must be given its place in the layers."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(setuptools["package-dir"].values()) == set(ALLOWED)

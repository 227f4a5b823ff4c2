"""House rules of the code base (issue #25), checked from the source with ``ast``:

* no module in ``core/`` over :data:`MAX_CORE_MODULE` lines and no page over :data:`MAX_PAGE`
  lines, unless its docstring argues why with a line ``Long module: <reason>``;
* no function (or method) in ``core/``, ``components/``, ``pages/`` or ``app.py`` over
  :data:`MAX_FUNCTION` lines, except the command lines' argument tables (``build_parser`` and
  friends, :data:`ARGUMENT_TABLES`) and a function its module's docstring argues for with a line
  ``Long function <name>: <reason>``;
* ``core/`` imports no Streamlit (except the cached loaders of :data:`STREAMLIT_IN_CORE`) and
  nothing from ``pages/`` or ``components/``: the layers are pages -> components -> core;
* no module in ``core/`` uses another module's private name;
* core.sweeps is two subpackages: ``analysis`` never imports ``running``, and ``running`` imports
  from ``analysis`` only :data:`RUNNING_USES_OF_ANALYSIS` (the aggregates stored as a sweep ends);
  the modules that moved there left nothing behind at their old paths;
* one lifecycle entry point (core.sweeps.running.lifecycle.launch) runs sweeps;
* one sweep read handle (core.sweeps.analysis.stored): nothing outside core.sweeps.analysis opens a
  sweep database to read it or calls an analysis function that does (first parameter ``db``);
* the README stays a front door;
* no package keeps code in its ``__init__.py`` (re-exports only).

Each test names every offender with its size, so a failure says what to split.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_CORE_MODULE = 600
MAX_PAGE = 250
MAX_FUNCTION = 80
# A command line's argument table is a list of add_argument calls: long, flat, and read as a table.
ARGUMENT_TABLES = re.compile(r"^_?(build_parser|make_parser|parser|argument_table|add_\w+_options)$")
STREAMLIT_IN_CORE: frozenset[str] = frozenset()  # core modules allowed to import streamlit (cached loaders)


def _python_files(*parts: str) -> list[Path]:
    files: list[Path] = []
    for part in parts:
        path = ROOT / part
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [f for f in files if ".venv" not in f.parts]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _docstring(tree: ast.Module) -> str:
    return ast.get_docstring(tree) or ""


def _rel(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


def _long_modules(files: list[Path], limit: int) -> list[str]:
    out = []
    for path in files:
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit and "Long module:" not in _docstring(_tree(path)):
            out.append(f"{_rel(path)}: {n} lines")
    return out


def long_functions(files: list[Path], limit: int = MAX_FUNCTION, root: Path = ROOT) -> list[str]:
    """``path:line name: N lines`` for every function over ``limit`` lines (def line to last line,
    docstring included) that is neither an argument table nor argued for in its module."""
    out = []
    for path in files:
        tree = _tree(path)
        argued = set(re.findall(r"Long function (\w+):", _docstring(tree)))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            n = node.end_lineno - node.lineno + 1
            if n > limit and not ARGUMENT_TABLES.match(node.name) and node.name not in argued:
                out.append(f"{_rel(path, root)}:{node.lineno} {node.name}: {n} lines")
    return out


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_function_check_measures_what_it_says(tmp_path):
    src = tmp_path / "m.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    src.write_text(f'"""Long function argued: why."""\ndef big():\n{body}\n\ndef argued():\n{body}\n\n'
                   f"def build_parser():\n{body}\n\ndef small():\n    return 1\n")
    assert long_functions([src], root=tmp_path) == ["m.py:2 big: 86 lines"]


def test_no_core_module_over_the_limit_unless_argued():
    offenders = _long_modules(_python_files("core"), MAX_CORE_MODULE)
    assert not offenders, f"core modules over {MAX_CORE_MODULE} lines (split, or argue 'Long module:'): {offenders}"


def test_no_page_over_the_limit_unless_argued():
    offenders = _long_modules(_python_files("pages"), MAX_PAGE)
    assert not offenders, f"pages over {MAX_PAGE} lines (move logic to core/components): {offenders}"


@pytest.mark.parametrize("part", ["core", "components", "pages", "app.py"])
def test_no_function_over_the_limit(part):
    offenders = long_functions(_python_files(part))
    assert not offenders, f"functions over {MAX_FUNCTION} lines in {part}: {offenders}"


def test_core_imports_no_streamlit_and_nothing_above_it():
    offenders = []
    for path in _python_files("core"):
        for name in _imports(_tree(path)):
            top = name.split(".")[0]
            if top == "streamlit" and _rel(path) not in STREAMLIT_IN_CORE:
                offenders.append(f"{_rel(path)} imports {name}")
            if top in ("pages", "components", "app"):
                offenders.append(f"{_rel(path)} imports {name}")
    assert not offenders, offenders


def private_imports(files: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line imports module._name`` for every import of another module's private name
    (``from core.x import _name``); a module's own package re-exporting is not a use."""
    out = []
    for path in files:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        out.append(f"{_rel(path, root)}:{node.lineno} imports {node.module}.{alias.name}")
    return out


PROJECT_PACKAGES = ("core", "components", "pages")


def private_calls(files: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line module._name`` for every use of a private attribute of an imported module
    (``report._store``, ``runner._tick()``): the owner's name for it, not another module's."""
    out = []
    for path in files:
        tree = _tree(path)
        # the project's modules only: the standard library's documented os._exit is public
        modules = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and (node.level or (node.module or "").split(".")[0] in PROJECT_PACKAGES)
                   for a in node.names} | {a.asname or a.name.split(".")[0] for node in ast.walk(tree)
                                           if isinstance(node, ast.Import) for a in node.names
                                           if a.name.split(".")[0] in PROJECT_PACKAGES}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                out.append(f"{_rel(path, root)}:{node.lineno} {node.value.id}.{node.attr}")
    return out


def test_no_module_in_core_uses_another_modules_private_names():
    files = _python_files("core")
    offenders = private_imports(files) + private_calls(files)
    assert not offenders, f"private names used across modules (make them public, or move the code): {offenders}"


# The sweep lifecycle (local or Ray, the stored backend on resume, the aggregates at the end) is
# core.sweeps.running.lifecycle.launch: nothing above core.sweeps runs a sweep or stores aggregates itself.
LIFECYCLE_CALLS = ("run_sweep", "run_sweep_ray")
LIFECYCLE_HOME = "core/sweeps/running/lifecycle.py"


def lifecycle_calls(files: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line name`` for every call of run_sweep, run_sweep_ray or aggregates.store."""
    out = []
    for path in files:
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if name in LIFECYCLE_CALLS or (name == "store" and "aggregates" in owner):
                out.append(f"{_rel(path, root)}:{node.lineno} {name}")
    return out


def test_one_lifecycle_entry_point():
    files = [f for f in _python_files("core", "components", "pages", "app.py") if _rel(f) != LIFECYCLE_HOME]
    offenders = lifecycle_calls(files)
    assert not offenders, f"sweeps run outside core.sweeps.running.lifecycle.launch: {offenders}"


def test_the_readme_stays_a_front_door():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines: move detail to docs/ (docs/results/ for measurements)"


# core.sweeps: analysis reads a stored sweep however it ran; running fills the store and, at the end,
# stores the aggregates (core.sweeps.analysis.aggregates.store through lifecycle.launch).
RUNNING_USES_OF_ANALYSIS = frozenset({"core.sweeps.analysis.aggregates"})
MOVED_AWAY = ("core/sweeps/report.py", "core/sweeps/run.py", "core/sweeps/runner.py", "core/sweeps/ray.py",
              "core/sweeps/job.py", "core/sweeps/lifecycle.py", "core/sweeps/aggregates.py", "core/sweeps/tables.py",
              "core/sweeps/rows.py", "core/qa/onnx_backend.py", "core/qa/openvino_backend.py", "core/qa/int8_split.py",
              "core/qa/int8_per_token.py", "components/heatmap.py", "components/paper_views.py",
              "components/rows_table.py", "components/report_download.py", "core/sweeps/analysis/report.py",
              "components/highlight.py", "components/heatmaps/heatmap.py", "components/heatmaps/sweep_figures.py")


def imported_targets(tree: ast.Module) -> set[str]:
    """Every dotted name a module imports: ``import a.b`` gives a.b, ``from a import b`` a.b (b
    may be a module or a name in a)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def crossings(files: list[Path], forbidden: str, allowed: frozenset[str] = frozenset(),
              root: Path = ROOT) -> list[str]:
    """``path imports name`` for each import under the package ``forbidden`` that is not in (or
    under) one of ``allowed``."""
    out = []
    for path in files:
        for name in sorted(imported_targets(_tree(path))):
            if (name == forbidden or name.startswith(forbidden + ".")) and not any(
                    name == a or name.startswith(a + ".") for a in allowed):
                out.append(f"{_rel(path, root)} imports {name}")
    return out


def test_the_crossing_check_sees_both_import_forms(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from core.sweeps.running import run\nimport core.sweeps.running.plan\n"
                   "from core.sweeps.analysis.aggregates import store\nfrom core.sweeps import store as s\n")
    assert crossings([src], "core.sweeps.running", root=tmp_path) == [
        "m.py imports core.sweeps.running.plan", "m.py imports core.sweeps.running.run"]
    assert crossings([src], "core.sweeps.analysis", RUNNING_USES_OF_ANALYSIS, root=tmp_path) == []


def test_analysis_never_imports_running():
    offenders = crossings(_python_files("core/sweeps/analysis"), "core.sweeps.running")
    assert not offenders, f"a stored sweep is read the same however it ran: {offenders}"


def test_running_imports_analysis_only_for_the_stored_aggregates():
    offenders = crossings(_python_files("core/sweeps/running"), "core.sweeps.analysis", RUNNING_USES_OF_ANALYSIS)
    assert not offenders, f"running reaches into analysis beyond {sorted(RUNNING_USES_OF_ANALYSIS)}: {offenders}"


def test_moved_modules_left_no_shims_behind():
    assert not [p for p in MOVED_AWAY if (ROOT / p).exists()]
    assert (ROOT / "core/sweeps/running/lifecycle.py").is_file() and (ROOT / "core/qa/backends/selection.py").is_file()


def test_launch_is_defined_once():
    homes = [f"{_rel(path)}:{node.lineno}" for path in _python_files("core", "components", "pages")
             for node in ast.walk(_tree(path)) if isinstance(node, ast.FunctionDef) and node.name == "launch"]
    assert homes == [f"{LIFECYCLE_HOME}:{_launch_line()}"], homes


def _launch_line() -> int:
    tree = _tree(ROOT / LIFECYCLE_HOME)
    return next(n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch")


def module_graph(files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the modules of ``files`` it imports}, lazy imports inside functions included (they
    still tie the two modules together); a module importing its own package's ``__init__`` is not
    an edge (every submodule does, to be found)."""
    names = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p for p in files}

    def module_of(target: str) -> str | None:
        while target and target not in names:
            target = target.rpartition(".")[0]
        return target or None

    graph = {}
    for name, path in names.items():
        found = {module_of(t) for t in imported_targets(_tree(path))} | {module_of(t) for t in _imports(_tree(path))}
        graph[name] = {m for m in found if m and m != name and not name.startswith(m + ".")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def test_the_cycle_check_finds_a_lazy_cycle_and_nothing_else(tmp_path):
    pkg = tmp_path / "core" / "p"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from core.p.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from core.p import a\n")
    (pkg / "c.py").write_text("import core.p\nfrom core.p.a import x\n")
    graph = module_graph(sorted(tmp_path.rglob("*.py")), root=tmp_path)
    assert import_cycles(graph) == [["core.p.a", "core.p.b"]]


def test_no_import_cycle_in_core():
    cycles = import_cycles(module_graph(_python_files("core")))
    assert not cycles, f"modules that import each other (directly or round a loop): {cycles}"


def _package_code(init: Path) -> list[str]:
    """The functions and classes an ``__init__.py`` defines (re-exports are allowed: a package's
    front door may name what its modules hold)."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def test_package_code_lives_in_modules_not_in_init():
    offenders = {str(p.relative_to(ROOT)): names for p in sorted((ROOT / "core").rglob("__init__.py"))
                 + sorted((ROOT / "components").rglob("__init__.py")) if (names := _package_code(p))}
    assert not offenders, f"code in a package's __init__.py (move it to a module named for it): {offenders}"


def test_the_init_check_sees_a_function(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text('"""doc"""\nfrom x import y\n\ndef helper():\n    return 1\n')
    assert _package_code(init) == ["helper"]


# One sweep read handle (issue 56): outside core.sweeps.analysis, a stored sweep is read only through
# core.sweeps.analysis.stored (StoredSweep, list_sweeps, is_sweep_database), which resolves the sweep once
# and keeps what it read. The analysis functions that take the database (first parameter ``db``) and
# reopen it are the handle's to call; pure helpers over data already read (penalty_totals, the tables,
# the formatters) are anyone's. Writers (running/, store.py) open the store themselves.
ANALYSIS = "core/sweeps/analysis"
READ_HANDLE = "core.sweeps.analysis.stored"
STORE_WRITERS = ("core/sweeps/running/", "core/sweeps/store.py", ANALYSIS + "/")
# (module, function) that opens a sweep database to write it: the sweep command checks, before the
# first model load, that the database it will write is one (a folder or a foreign file is refused)
STORE_OPENED_TO_WRITE = frozenset({("core/sweeps/cli.py", "_check_inputs")})


def database_readers(analysis_files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """{module: its functions whose first parameter is ``db``} for the analysis modules but the handle's."""
    out = {}
    for path in analysis_files:
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        if module != READ_HANDLE:
            out[module] = {n.name for n in _tree(path).body if isinstance(n, ast.FunctionDef)
                           and n.args.args and n.args.args[0].arg == "db"}
    return out


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _enclosing_functions(tree: ast.Module) -> dict[ast.AST, str]:
    """{node: the top-level function (or class) it sits in}."""
    return {node: top.name for top in tree.body if isinstance(top, (ast.FunctionDef, ast.ClassDef))
            for node in ast.walk(top)}


def reads_outside_the_handle(files: list[Path], readers: dict[str, set[str]], root: Path = ROOT) -> list[str]:
    """``path:line what`` for each use of a database-reading analysis function, each ``reading(``
    and each ``Store(`` (but :data:`STORE_OPENED_TO_WRITE`) in ``files``."""
    out = []
    for path in files:
        rel, tree = _rel(path, root), _tree(path)
        modules = {}   # local name -> analysis module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name in readers.get(node.module, ()):
                        out.append(f"{rel}:{node.lineno} imports {node.module}.{a.name}")
                    elif f"{node.module}.{a.name}" in readers:
                        modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                modules |= {a.asname or a.name: a.name for a in node.names if a.name in readers}
        inside = _enclosing_functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and modules.get(_dotted(node.value)) in readers:
                module = modules[_dotted(node.value)]
                if node.attr in readers[module]:
                    out.append(f"{rel}:{node.lineno} uses {module}.{node.attr}")
            elif isinstance(node, ast.Call):
                name = _dotted(node.func).rpartition(".")[2]
                if name == "reading" or (name == "Store" and (rel, inside.get(node)) not in STORE_OPENED_TO_WRITE):
                    out.append(f"{rel}:{node.lineno} calls {name}(")
    return sorted(set(out))


def test_the_read_handle_check_sees_every_way_round_it(tmp_path):
    analysis = tmp_path / "core" / "sweeps" / "analysis"
    analysis.mkdir(parents=True)
    (analysis / "sweep_cells.py").write_text("def cells(db, sweep):\n    pass\n\n"
                                             "def penalty_totals(cells):\n    pass\n")
    (analysis / "stored.py").write_text("def list_sweeps(db):\n    pass\n")
    readers = database_readers(sorted(analysis.glob("*.py")), root=tmp_path)
    assert readers == {"core.sweeps.analysis.sweep_cells": {"cells"}}
    page = tmp_path / "page.py"
    page.write_text("from core.sweeps.analysis.sweep_cells import cells, penalty_totals\n"
                    "from core.sweeps.analysis import sweep_cells as sc\n"
                    "import core.sweeps.analysis.sweep_cells\n"
                    "from core.sweeps.analysis.stored import StoredSweep, list_sweeps\n"
                    "def show(db):\n"
                    "    sc.cells(db, 1), sc.penalty_totals([])\n"
                    "    core.sweeps.analysis.sweep_cells.cells(db, 1)\n"
                    "    StoredSweep(db, 1).cells(), list_sweeps(db)\n"
                    "    with reading(db) as s, store.Store(db, readonly=True) as t:\n"
                    "        pass\n")
    assert reads_outside_the_handle([page], readers, root=tmp_path) == [
        "page.py:1 imports core.sweeps.analysis.sweep_cells.cells",
        "page.py:6 uses core.sweeps.analysis.sweep_cells.cells",
        "page.py:7 uses core.sweeps.analysis.sweep_cells.cells",
        "page.py:9 calls Store(", "page.py:9 calls reading("]
    cli = tmp_path / "core" / "sweeps" / "cli.py"   # the sweep command may open the store it will write, only there
    cli.write_text("def _check_inputs(args):\n    Store(args.db)\n\ndef _read(args):\n    Store(args.db)\n")
    assert reads_outside_the_handle([cli], readers, root=tmp_path) == ["core/sweeps/cli.py:5 calls Store("]


def test_one_sweep_read_handle():
    readers = database_readers(_python_files(ANALYSIS))
    files = [f for f in _python_files("core", "components", "pages", "app.py")
             if not _rel(f).startswith(STORE_WRITERS)]
    offenders = reads_outside_the_handle(files, readers)
    assert not offenders, f"read a stored sweep through {READ_HANDLE} (StoredSweep, list_sweeps): {offenders}"


def _download_buttons(files: list[Path]) -> list[tuple[str, ast.Call]]:
    """Every ``download_button`` call in ``files``, as "file:line" and its call."""
    found = []
    for f in files:
        for node in ast.walk(_tree(f)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button":
                found.append((f"{_rel(f) if f.is_relative_to(ROOT) else f}:{node.lineno}", node))
    return found


def _downloads_that_rerun(files: list[Path]) -> list[str]:
    return [where for where, node in _download_buttons(files)
            if not (isinstance(on_click := {k.arg: k.value for k in node.keywords}.get("on_click"), ast.Constant)
                    and on_click.value == "ignore")]


UI_FILES = _python_files("pages") + _python_files("components") + [ROOT / "app.py"]


def test_no_download_reruns_its_page():
    # A download that reruns its page (Streamlit's default) redraws everything for nothing, and a
    # rerun that makes the file anew lets the browser fetch a file the server has already dropped:
    # a cancelled download (seen in the browser tests under load). on_click="ignore" fetches only.
    assert _downloads_that_rerun(UI_FILES) == []


def test_every_download_is_the_one_in_components_export():
    # one download button (components.export.download) keeps the rule above in one place
    assert [where.split(":")[0] for where, _ in _download_buttons(UI_FILES)] == ["components/export.py"]


def test_the_download_check_sees_a_default_button(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('import streamlit as st\nst.download_button("a", b"", "a.csv")\n'
                    'st.download_button("b", b"", "b.csv", on_click="ignore")\n')
    assert [line.rsplit(":", 1)[1] for line in _downloads_that_rerun([page])] == ["2"]


# Where a progress bar may be drawn without components/cancellable.py, and why. A long job run in a
# page's own run gets its bar and Cancel from there ("every long job shows progress and can be
# cancelled"); a new bar elsewhere needs a reason here.
BARS_WITHOUT_CANCELLABLE = {
    "components/cancellable.py": "the bar beside Cancel",
    "components/job_progress.py": "a background sweep's bar, beside its own Cancel",
    "components/attribution.py": "a background attribution run, beside its own Cancel",
    "components/demo_sweep.py": "the bundled demo sweep, built once in about ten seconds",
    "components/heatmaps/rows_table.py": "a sweep's rows, read once into the server's shared table",
    "pages/speech_trial.py": "the trial's count of recorded questions, not a job",
}


def _progress_calls(files: list[Path]) -> set[str]:
    return {_rel(f) for f in files for node in ast.walk(_tree(f))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "progress"}


def test_every_progress_bar_is_cancellable_or_says_why_not():
    assert _progress_calls(UI_FILES) <= set(BARS_WITHOUT_CANCELLABLE), \
        sorted(_progress_calls(UI_FILES) - set(BARS_WITHOUT_CANCELLABLE))

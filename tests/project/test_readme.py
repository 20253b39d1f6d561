"""Every fenced code block of README.md and of the documentation site runs, one test per block.

The pages are README.md and every Markdown page under ``docs/pages/``; each page's blocks run
in order with the README's conventions (also stated in its Development section):

* A ```` ```python ```` block runs in a fresh namespace. ```` ```python continued ```` runs in
  the namespace left by the python block before it (GitHub renders only the first word of the
  info string, so the marker is invisible to readers). A chain of continued blocks is re-run
  from its first block in every test, so each test stands alone (``-k``, ``-n auto``).
* A python block whose first line starts with ``>>>`` is a doctest: every example's output is
  compared (``NORMALIZE_WHITESPACE``, as the package's doctests) and the block holds nothing
  but examples and their output.
* A ```` ```bash ```` (or ``sh``, ``shell``, ``console``) block: the ``rank-eval ...`` and
  ``python -m polars_rankeval ...`` commands run in-process through
  ``polars_rankeval.cli.main(argv)`` and must exit 0. ``pip install`` lines are not run (the
  suite runs in the installed environment), nor ``python -m pytest`` (the suite itself; see
  ``test_ci_runs_the_readme_test_command``), nor ``spark-submit`` (with any leading
  ``VAR=value``), nor the benchmark and sample generator scripts, nor ``mkdocs`` (the site's
  build is ``tests/project/test_docs.py``).
  Any other command fails the test until this module is taught about it.
  A command whose line ends with the comment ``# exits N`` must exit N instead (the
  regression gate's failing example).
* A ```` ```yaml ```` block is a GitHub Actions workflow: the ``run:`` steps of its jobs run
  in order as shell blocks (``uses:`` steps are GitHub's and are skipped).
* A ```` ```text ```` block directly after a python script block or a shell block (prose may
  sit between them, no other code block) is that block's printed output, and is compared with
  what it prints (``NORMALIZE_WHITESPACE``). Without one, printed output is not checked.
* Every block needs one of these info strings: a block in any other language fails.

Blocks run in a temporary directory holding a copy of the repository's ``data/`` and nothing
else, so an example that reads a file a fresh clone lacks fails.

A small collector rather than a plugin: pytest's ``--doctest-glob`` only runs ``>>>`` examples
(plain python blocks, shell blocks and output blocks would go unchecked, and it runs in the
repository rather than in a prepared directory); pytest-markdown-docs runs python fences (with
a ``continuation`` marker) but checks no printed output and no shell command; phmdoctest
generates a test file that has to be regenerated and run shell blocks not at all;
pytest-codeblocks runs shell blocks through a real shell, ``pip install`` included. None of
them builds the example files. The whole collector is the code below.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import dropwhile
from pathlib import Path

import pytest

from polars_rankeval.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted((DOCS / "pages").rglob("*.md"))]

PYTHON = {"python", "py", "python3"}
SHELL = {"bash", "sh", "shell", "console"}
OUTPUT = {"text", "output"}
WORKFLOW = {"yaml", "yml"}
CONTINUED = "continued"
DOCTEST_FLAGS = doctest.NORMALIZE_WHITESPACE

# Temporary: blocks that fail because of a bug in the library, not in the README, keyed by the
# block's first line (or, where several blocks share it, such as an import, by another line of
# the block that identifies it): xfail(strict=True), so a fixed bug turns the test red until
# its entry goes. Empty: every README block passes.
KNOWN_LIBRARY_BUGS: dict[str, str] = {}


# ---- parsing -------------------------------------------------------------------------------------

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    """One fenced block: ``line`` is the 1-based line of its opening fence."""

    line: int
    lang: str
    flags: list[str]
    source: str
    output: Block | None = field(default=None, repr=False)
    previous_python: Block | None = field(default=None, repr=False)
    path: Path = README

    @property
    def page(self) -> str:
        """The page's path from the repository root (README.md, docs/pages/...)."""
        return self.path.relative_to(ROOT).as_posix()

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.source.splitlines() if line.strip()), "")

    @property
    def is_doctest(self) -> bool:
        return self.first_line.startswith(">>>")


def parse_blocks(text: str, path: Path = README) -> list[Block]:
    """Fenced blocks in document order (CommonMark fences, indented ones in lists included)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None or ("`" in match["info"] and match["fence"][0] == "`"):
            i += 1
            continue
        indent, fence, info = len(match["indent"]), match["fence"], match["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if (
                closing is not None
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            j += 1
        lang = info[0].lower() if info else ""
        blocks.append(Block(i + 1, lang, info[1:], "\n".join(body) + "\n", path=path))
        i = j + 1
    previous_python: Block | None = None
    for before, block in zip([None, *blocks], blocks, strict=False):
        if block.lang in OUTPUT and before is not None and before.lang in PYTHON | SHELL:
            before.output = block
        if block.lang in PYTHON:
            block.previous_python = previous_python
            previous_python = block
    return blocks


# ---- running -------------------------------------------------------------------------------------


def _compare(want: str, got: str, where: str) -> None:
    if not doctest.OutputChecker().check_output(want, got, DOCTEST_FLAGS):
        raise AssertionError(f"{where}: printed output differs\n--- README\n{want}--- got\n{got}")


def _run_python(block: Block, namespace: dict[str, object]) -> str:
    """Run a python block in ``namespace``; returns what it printed (checked doctests print '')."""
    if block.is_doctest:
        parser = doctest.DocTestParser()
        prose = [part for part in parser.parse(block.source) if isinstance(part, str)]
        assert not "".join(prose).strip(), (
            f"{block.where}: a doctest block holds only >>> examples and their output"
        )
        # lineno: the example lines are reported as README line numbers
        test = parser.get_doctest(block.source, namespace, block.page, str(block.path), block.line)
        report = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
        runner.run(test, out=report.write, clear_globs=False)
        assert runner.failures == 0, report.getvalue()
        return ""
    # blank lines ahead of the source: tracebacks name README.md lines
    code = compile("\n" * block.line + block.source, str(block.path), "exec")
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)
    except Exception as error:
        # the README frames only: pytest would print the whole README as the failing "function"
        frames = traceback.extract_tb(error.__traceback__)
        shown = traceback.format_list([f for f in frames if f.filename == str(block.path)])
        shown += traceback.format_exception_only(error)
        raise AssertionError(f"{block.where}: the block raised\n{''.join(shown)}") from None
    return printed.getvalue()


def _chain(block: Block) -> list[Block]:
    """The python blocks ``block`` continues, first one first, then ``block``."""
    chain = [block]
    while CONTINUED in chain[0].flags:
        before = chain[0].previous_python
        assert before is not None, f"{chain[0].where}: '{CONTINUED}' but no block before"
        chain.insert(0, before)
    return chain


def _unquoted(command: str, characters: str) -> str:
    """The characters of ``characters`` that occur outside quotes in ``command``."""
    found, quote = "", ""
    for char in command:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in characters:
            found += char
    return found


def _commands(source: str) -> list[list[str]]:
    """The commands of a shell block: comments dropped, lines joined, split on ``&&`` and ``;``."""
    joined = re.sub(r"\\\n", " ", source)
    commands: list[list[str]] = []
    for raw in joined.splitlines():
        line = raw.strip().removeprefix("$ ")
        special = _unquoted(line.split(" #")[0], "*?[]$`|<>(){}~")
        assert not special, f"the README runner does not emulate the shell for {special!r}: {raw}"
        current: list[str] = []
        for token in shlex.split(line, comments=True):
            if token in {"&&", ";"}:
                commands.append(current)
                current = []
            else:
                current.append(token.removesuffix(";"))
        if current:
            commands.append(current)
    return [command for command in commands if command]


def _expected_status(source: str, command: list[str]) -> int:
    """0, or N where the command's line ends with the comment ``# exits N``.

    A regression gate's page shows a failing check (exit status 1) as printed.
    """
    joined = re.sub(r"\\\n", " ", source)
    for line in joined.splitlines():
        found = re.search(r"#\s*exits\s+(\d+)\s*$", line)
        if found and shlex.split(line, comments=True) == command:
            return int(found[1])
    return 0


def _is_cli(command: list[str]) -> list[str] | None:
    """The argv of a ``rank-eval`` / ``python -m polars_rankeval`` command, else None."""
    if command[0] == "rank-eval":
        return command[1:]
    if command[:3] == ["python", "-m", "polars_rankeval"]:
        return command[3:]
    return None


def _not_run(command: list[str]) -> bool:
    """Commands the README shows but the suite does not run (see the module docstring)."""
    return (
        command[:4] == ["python", "-m", "pip", "install"]
        or command[:2] == ["pip", "install"]
        or command[:3] == ["python", "-m", "pytest"]
        or command[:2] in (["python", "benchmarks/suite.py"], ["python", "data/make_sample.py"])
        # the site's build runs in tests/project/test_docs.py
        or command[0] == "mkdocs"
        # a Spark job needs a Spark installation and a Java runtime; VAR=value may lead it
        or next(dropwhile(lambda token: re.fullmatch(r"[A-Z_]+=\S*", token), command), "")
        == "spark-submit"
    )


def _run_shell(block: Block, source: str | None = None) -> str:
    printed = ""
    source = block.source if source is None else source
    for command in _commands(source):
        argv = _is_cli(command)
        if argv is None:
            assert _not_run(command), (
                f"{block.where}: unknown command {shlex.join(command)!r}; "
                "tests/project/test_readme.py must be told whether to run it"
            )
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli_main(argv)
        wanted = _expected_status(source, command)
        assert status == wanted, f"{shlex.join(command)} exited {status}: {err.getvalue()}"
        printed += out.getvalue()
    return printed


def _run_workflow(block: Block) -> str:
    """A GitHub Actions workflow: each job's ``run:`` steps, in order, as shell blocks."""
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the docs extra (mkdocs)")
    workflow = yaml.safe_load(block.source)
    assert isinstance(workflow, dict), f"{block.where}: not a workflow"
    assert workflow.get("jobs"), f"{block.where}: no jobs"
    printed = ""
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            assert "run" in step or "uses" in step, f"{block.where}: a step without run/uses"
            if "run" in step:  # `uses:` actions (checkout, setup-python) are GitHub's
                printed += _run_shell(block, step["run"])
    return printed


def check_block(block: Block) -> None:
    """Run one block (and the blocks it continues); raise AssertionError when it fails."""
    if block.lang in PYTHON:
        namespace: dict[str, object] = {"__name__": "__readme__"}
        *before, last = _chain(block)
        for earlier in before:
            _run_python(earlier, namespace)
        printed = _run_python(last, namespace)
        if block.output is not None:
            assert not block.is_doctest, (
                f"{block.where}: a doctest block shows its output inline, not in a text block"
            )
    elif block.lang in SHELL:
        assert not block.flags, f"{block.where}: shell blocks take no flags"
        printed = _run_shell(block)
    elif block.lang in WORKFLOW:
        printed = _run_workflow(block)
    else:
        raise AssertionError(
            f"{block.where}: a ```{block.lang} block; use python, bash or text (output "
            "right after a python or bash block), or teach tests/project/test_readme.py the "
            "language"
        )
    if block.output is not None:
        _compare(block.output.source, printed, block.where)


def _is_output(block: Block, blocks: list[Block]) -> bool:
    return any(other.output is block for other in blocks)


# ---- the example files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding what the examples read: a copy of ``data/``, nothing else.

    Every example reads the files a fresh clone has (tests/project/test_docs.py checks the paths),
    so the runner adds none of its own.
    """
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "data", root / "data")
    return root


# ---- the tests -----------------------------------------------------------------------------------

PAGE_BLOCKS = {page: parse_blocks(page.read_text(encoding="utf-8"), page) for page in PAGES}
BLOCKS = [block for blocks in PAGE_BLOCKS.values() for block in blocks]


def _params() -> list[object]:
    params = []
    for block in BLOCKS:
        if _is_output(block, BLOCKS):
            continue
        lines = [block.first_line, *(line.strip() for line in block.source.splitlines())]
        bug = next((KNOWN_LIBRARY_BUGS[line] for line in lines if line in KNOWN_LIBRARY_BUGS), None)
        marks = (
            [] if bug is None else [pytest.mark.xfail(reason=f"library bug: {bug}", strict=True)]
        )
        pages = DOCS / "pages"
        page = "" if block.path == README else f"{block.path.relative_to(pages).with_suffix('')}-"
        params.append(
            pytest.param(block, id=f"{page}line{block.line}-{block.lang or 'none'}", marks=marks)
        )
    return params


@pytest.mark.parametrize("block", _params())
def test_readme_block(block: Block, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    check_block(block)


def test_readme_has_blocks_of_each_kind() -> None:
    # a parser that silently found nothing would make every test above vacuous
    langs = {block.lang for block in BLOCKS}
    assert {"python", "bash", "text"} <= langs
    assert any(block.is_doctest for block in BLOCKS)
    assert any(block.output is not None for block in BLOCKS)


def test_ci_runs_the_readme_test_command() -> None:
    """``.ci/run`` ends with the README's Quickstart command 2, and every pytest command agrees."""
    ci_command = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    quickstart = README.read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    command_2 = next(
        line for line in parse_blocks(quickstart)[0].source.splitlines() if "pytest" in line
    )
    assert command_2.strip() == ci_command
    pytest_commands = {
        shlex.join(command[command.index("pytest") - 2 :])
        for block in BLOCKS
        if block.lang in SHELL
        for command in _commands(block.source)
        if command[:3] == ["python", "-m", "pytest"]
    }
    ci_pytest = shlex.split(ci_command.split("&&")[-1])
    assert pytest_commands == {shlex.join(ci_pytest)}


def test_data_readme_lists_exactly_the_files_in_tests_data() -> None:
    """Every file ``tests/data/README.md`` lists in a table exists, and every file is listed."""
    data = ROOT / "tests" / "data"
    listed = set()
    for line in (data / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            listed |= set(re.findall(r"`([^`]+)`", first_cell))
    present = {
        path.relative_to(data).as_posix()
        for path in data.rglob("*")
        if path.is_file() and path.name != "README.md"
    }
    assert listed - present == set(), "listed but missing"
    assert present - listed == set(), "present but not listed"


# ---- the runner can fail -------------------------------------------------------------------------

SYNTHETIC = """\
Intro.

```python
x = 40
print(x + 2)
```

It prints:

```text
42
```

  ```python continued
  print(x)
  ```

```python
>>> 1 + 1
2
```

```bash
python -m pip install . && python -m polars_rankeval data/sample.parquet --by system -m num_q
```

```text
┌────────┬───────┐
│ system ┆ num_q │
╞════════╪═══════╡
│ bm25   ┆ 3000  │
│ neural ┆ 3000  │
└────────┴───────┘
```
"""


def _mutate(block: Block, old: str, new: str) -> Block:
    assert old in block.source
    return Block(block.line, block.lang, block.flags, block.source.replace(old, new))


def test_runner_parses_chains_outputs_and_indented_fences() -> None:
    blocks = parse_blocks(SYNTHETIC)
    assert [(b.line, b.lang, b.flags) for b in blocks] == [
        (3, "python", []),
        (10, "text", []),
        (14, "python", ["continued"]),
        (18, "python", []),
        (23, "bash", []),
        (27, "text", []),
    ]
    assert blocks[0].output is blocks[1]
    assert blocks[2].source == "print(x)\n"
    assert _chain(blocks[2]) == [blocks[0], blocks[2]]
    assert blocks[3].is_doctest
    assert blocks[4].output is blocks[5]


@pytest.mark.parametrize(
    ("index", "break_it"),
    [
        (0, lambda b: _mutate(b, "x + 2", "x + 3")),  # printed output differs from the text block
        (2, lambda b: _mutate(b, "print(x)", "print(y)")),  # not in the continued namespace
        (3, lambda b: _mutate(b, "1 + 1", "1 + 2")),  # doctest output differs
        (3, lambda b: _mutate(b, ">>> 1 + 1\n2\n", ">>> 1 + 1\n2\n\nprose\n")),  # prose in doctest
        (4, lambda b: _mutate(b, "-m num_q", "-m num_q,map")),  # CLI output differs
        (4, lambda b: _mutate(b, "num_q", "nmu_q")),  # CLI exits 2
        (4, lambda b: _mutate(b, "python -m pip install .", "make install")),  # unknown command
        (4, lambda b: _mutate(b, "data/sample.parquet", "data/*.parquet")),  # an unquoted glob
        (4, lambda b: Block(b.line, "toml", [], b.source)),  # a language the runner lacks
    ],
)
def test_runner_fails_broken_blocks(
    index: int,
    break_it: Callable[[Block], Block],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(workdir)
    blocks = parse_blocks(SYNTHETIC)
    check_block(blocks[index])  # passes as written
    broken = break_it(blocks[index])
    broken.output = blocks[index].output
    broken.previous_python = blocks[index].previous_python
    with pytest.raises(AssertionError):
        check_block(broken)

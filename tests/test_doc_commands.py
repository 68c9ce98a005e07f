"""Every command in README.md, docs/*.md and bench/README.md works as written, so the docs cannot
drift from the code.

Commands are the lines of ```sh blocks (and of bare ``` blocks that start with a program) and the
inline code spans that start with a program (``tritium``, ``python``, ``pip``, ``bash``,
``pytest``).  Each one is checked:

* every ``--option`` it uses is listed by its program's ``-h`` (the CLI, a ``python -m`` module,
  a bench script, pytest with the project's conftest);
* every other command is run, in a scratch folder that holds the files the docs
  name as placeholders (``kernels.py``, ``train.py``, ``some-command``, ...), and must exit 0.  Long
  ones get a narrowing filter appended (``NARROW``); everything else runs exactly as written;
* ``pip`` commands name only paths of this repository that are packages, extras that
  ``pyproject.toml`` declares (read from the installed metadata), and outside packages listed in
  ``EXTERNAL`` (with why they are not installed here); the README's set-up commands are what
  ``.ci/run`` runs;
* shell scripts under bench/ parse (``bash -n``); they drive GPU benchmarks.

A new command in the docs is run by default; one that cannot run here needs a ``NOT_RUN`` entry
saying why, and then at least its options are checked.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PROGRAM = re.compile(r"^(?:[A-Z_]+=\S+ )*(?:tritium|python3?|pip|bash|pytest)(?: |$)")

# Packages the docs tell users to install from outside this repository, and why they are not
# installed by these tests.
EXTERNAL = {
    "hip-python": "needs ROCm (/opt/rocm), for launching on AMD GPUs",
    "triton": "the real Triton, for side-by-side benchmarks on a GPU",
    "ziglang": "an optional ld.lld for the AMD backend",
    "tritium": "the published package (a vendor's CI installs it from an index)",
    "tritium-<vendor>": "a vendor's plugin, a placeholder name",
}
# Appended to commands that would otherwise run a whole suite here.
NARROW = [
    (re.compile(r"^(tritium conformance|python -m conformance)(?!.*--list)"), "-k 'elementwise/add-fp32*'"),
    (re.compile(r"^pytest conformance"), "-q -k 'add-fp32' -p no:cacheprovider"),
    (re.compile(r"^pytest plugins/"), "-q --collect-only -p no:cacheprovider"),
]
# Commands checked for their options only, and why they are not run here.
NOT_RUN = [
    (re.compile(r"^python3? bench/"), "a benchmark: a timed run, most of them on a CUDA device beside Triton"),
    (re.compile(r"^python -m ziglang"), "ziglang is an optional outside package"),
]
# What .ci/run runs as written (the README's test command: the whole test suite).
CI_RUNS = [re.compile(r"^pip install -e '\.\[test\]'.*&& python -m pytest$")]
# Placeholders the docs use for a name the reader supplies, and what stands in for them here.
STAND_INS = {"package.module:plugin": "tritium_toy.plugin:plugin"}
# Spans that name a command's option rather than a command (``tritium conformance --plugin``).
MENTIONS = [re.compile(r"^tritium conformance --plugin$"), re.compile(r"^python -m tritium\.run_as_triton$"),
            re.compile(r"^tritium$"), re.compile(r"^tritium [a-z]+$")]

README_KERNEL_HEADER = "Save this as `kernels.py`"


def documented_commands() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text()
        rel = str(path.relative_to(ROOT))
        for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            if m.group(1) not in ("sh", "bash", "shell", "console", ""):
                continue
            for line in m.group(2).replace("\\\n", " ").splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                if PROGRAM.match(line):
                    found.append((rel, " ".join(line.split())))
        for m in re.finditer(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
            span = " ".join(m.group(1).split())
            if PROGRAM.match(span):
                found.append((rel, span))
    return found


def _parts(command: str) -> list[str]:
    return [p.strip() for p in re.split(r"&&|\|", command) if p.strip()]


def _expand_optional(command: str) -> str:
    """``prog [--a X] [--b]`` (a usage synopsis) as the command with every option given."""
    command = re.sub(r"\[([^\]]*)\]", r"\1", command)
    return command.replace(" N", " 1").replace("FILE", "out.json").replace("DIR", "dump")


# -- the scratch folder with the placeholder files the docs name ---------------------------------------
@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("doc_commands")
    readme = (ROOT / "README.md").read_text()
    using = readme.split("## Using it", 1)[1]
    assert README_KERNEL_HEADER in using
    kernels = re.search(r"```python\n(.*?)```", using, re.S).group(1)
    (d / "kernels.py").write_text(kernels)
    (d / "my_kernel.py").write_text(kernels)
    (d / "k.py").write_text(kernels.replace("def add_kernel(", "def kernel(").replace("add_kernel[", "kernel["))
    probe = "import sys, triton, tritium\nassert triton.__version__ == '3.6.0' and triton.jit is tritium.jit\n" \
            "print('args', sys.argv[1:])\n"
    for name in ("script.py", "my_script.py", "train.py"):
        (d / name).write_text(probe)
    (d / "tests").mkdir()
    (d / "tests" / "test_probe.py").write_text(
        "import triton, tritium\n\ndef test_triton_is_tritium():\n    assert triton.jit is tritium.jit\n")
    (d / "some-command").write_text("#!/bin/sh\nexec \"" + sys.executable + "\" -c 'import triton, tritium; "
                                    "assert triton.jit is tritium.jit; print(triton.__version__)'\n")
    (d / "some-command").chmod(0o755)
    r = _run("tritium compile kernels.py:add_kernel --signature '*fp32,*fp32,*fp32,i32' "
             "--constexpr BLOCK=1024 --target cuda:90 --stage ttgir -o ttgir_out/", d)
    assert r.returncode == 0, r.stderr[-2000:]
    (d / "kernel.ttgir").write_text((d / "ttgir_out" / "add_kernel.ttgir").read_text())
    return d


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # the repository (conformance) and the toy backend that stands in for a plugin under development
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), str(ROOT / "tests" / "plugins"),
                                                    env.get("PYTHONPATH", "")] if p)
    env.pop("TRITIUM_BACKEND", None)
    return env


def _run(command: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    # ``python``/``pytest`` are this interpreter's; ``some-command`` is the scratch folder's
    command = re.sub(r"(^|[\s;(|&$])(python3?)(?= )", lambda m: m.group(1) + shlex.quote(sys.executable), command)
    command = re.sub(r"(^|&& |\| )pytest ", lambda m: m.group(1) + shlex.quote(sys.executable) + " -m pytest ",
                     command)
    command = command.replace(" some-command", " ./some-command")
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=_env())


# -- options: every --option a command uses is one its program lists --------------------------------
def _help_command(part: str) -> str | None:
    words = shlex.split(re.sub(r"^(?:[A-Z_]+=\S+ )+", "", part))
    if words[0] == "tritium":
        sub = words[1] if len(words) > 1 and not words[1].startswith("-") else None
        return f"tritium {sub} -h" if sub else "tritium -h"
    if words[0] in ("python", "python3"):
        if words[1] == "-m":
            return f"python -m {words[2]} -h" if words[2] in ("conformance", "tritium.run_as_triton") else None
        if words[1].endswith(".py") and (ROOT / words[1]).exists():
            return f"python {words[1]} -h"
    if words[0] == "pytest":
        return "pytest conformance --help -p no:cacheprovider"
    return None


@functools.lru_cache(maxsize=None)
def _help_text(help_command: str) -> str:
    r = _run(help_command, ROOT, timeout=120)
    assert r.returncode == 0, (help_command, r.stderr[-2000:])
    return r.stdout + r.stderr


def _options(part: str) -> list[str]:
    return re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])(?=[\s=]|$)", _expand_optional(part))


# -- pip: local paths, extras, outside packages ----------------------------------------------------------
def _check_pip(part: str) -> list[str]:
    problems = []
    extras = importlib.metadata.metadata("tritium").get_all("Provides-Extra") or []  # pyproject's, installed
    words = shlex.split(part)
    skip_next = False
    for w in words[2:]:
        if skip_next or w.startswith("-") or w == "dist/*.whl":
            skip_next = w in ("-w", "--wheel-dir", "-d", "--dest", "--target")
            continue
        local = re.match(r"^(\.(?:/[\w./-]*)?)(?:\[([\w,]+)\])?$", w)
        if local:
            path = ROOT / local.group(1)
            if not (path / "pyproject.toml").exists():
                problems.append(f"{w}: {path} is not a package of this repository")
            for extra in (local.group(2) or "").split(","):
                if extra and extra not in extras:
                    problems.append(f"{w}: pyproject.toml declares no extra '{extra}'")
            continue
        name = w if w in EXTERNAL else re.split(r"[=~<>!]", w)[0]
        if name not in EXTERNAL:
            problems.append(f"{w}: an outside package not listed in EXTERNAL")
    return problems


def _kind(command: str) -> str:
    if any(m.match(command) for m in CI_RUNS):
        return "ci"
    if any(m.match(command) for m in MENTIONS):
        return "mention"
    if command.startswith("bash "):
        return "script"
    if all(p.startswith("pip ") for p in _parts(command)):
        return "pip"
    if any(p.match(command) for p, _ in NOT_RUN) or "hip-python" in command:
        return "options"
    return "run"


COMMANDS = documented_commands()
_IDS = [f"{f}:{c[:60]}" for f, c in COMMANDS]


def test_the_scan_finds_the_commands():
    assert len(COMMANDS) > 30, "the scan found too few commands: has the docs' layout changed?"
    for f, c in COMMANDS:
        if _kind(c) == "options":  # not run here: its options must at least be checked
            for part in _parts(c):
                assert part.startswith("pip ") or _help_command(part) or part.startswith("python -m ziglang"), \
                    f"{f}: nothing checks `{part}`; add a rule to tests/test_doc_commands.py"


def test_readme_setup_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    setup = [c for f, c in COMMANDS if f == "README.md" and c.startswith("pip install -e '.[test]'")]
    assert setup and all(c in ci for c in setup), setup
    wheel = [c for f, c in COMMANDS if f == "README.md" and c.startswith("pip wheel")]
    # .ci/run builds and installs the wheels in a fresh environment, then runs the examples there
    assert wheel and all(p in ci for c in wheel for p in _parts(c) if p.startswith("pip ")), wheel
    assert re.search(r'tritium"? examples', ci) and "pip install -e . && tritium examples" in readme


@pytest.mark.parametrize("doc,command", COMMANDS, ids=_IDS)
def test_documented_command(doc, command, scratch):
    kind = _kind(command)
    if kind == "ci":
        assert command in (ROOT / ".ci" / "run").read_text()
        return
    if kind == "mention":
        words = command.split()
        assert words[-1] in _help_text(_help_command(command))
        return
    if kind == "script":
        script = ROOT / shlex.split(command)[1]
        assert script.exists(), f"{doc}: {script} does not exist"
        r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return
    problems = []
    for part in _parts(command):
        if part.startswith("pip "):
            problems += _check_pip(part)
            continue
        help_command = _help_command(part)
        if help_command:
            listed = _help_text(help_command)
            if not part.startswith("python -m tritium.run_as_triton"):  # its options are the program's
                problems += [f"`{o}` is not an option of `{help_command}`" for o in _options(part) if o not in listed]
    assert not problems, f"{doc}: `{command}`: " + "; ".join(problems)
    if kind == "pip":
        return
    if kind == "options":
        reason = next((why for p, why in NOT_RUN if p.match(command)), "needs ROCm")
        pytest.skip(f"options checked; not run here: {reason}")
    run = _expand_optional(command) if "[" in command else command
    run = " && ".join(p.strip() for p in run.split("&&") if not p.strip().startswith("pip "))
    for placeholder, stand_in in STAND_INS.items():
        run = run.replace(placeholder, stand_in)
    for pattern, extra in NARROW:
        if pattern.match(run):
            run = f"{run} {extra}"
    r = _run(run, ROOT if run.startswith("pytest ") else scratch)
    assert r.returncode == 0, f"{doc}: `{run}` exited {r.returncode}:\n{r.stdout[-1500:]}\n{r.stderr[-2500:]}"

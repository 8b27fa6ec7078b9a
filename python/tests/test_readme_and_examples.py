"""The README's Python snippets and the Python example run as documented."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_section(title):
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("## " + title + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_readme_python_snippets_run():
    blocks = re.findall(r"```python\n(.*?)```", readme_section("Use from Python"), re.S)
    assert blocks, "the README has no Python snippet under 'Use from Python'"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_fit_spring_example_decreases_loss():
    script = os.path.join(ROOT, "examples", "python", "fit_spring.py")
    out = subprocess.run([sys.executable, script], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout
    losses = [float(m) for m in re.findall(r"loss\s+([0-9.]+)", out)]
    assert len(losses) >= 5
    assert all(b < a for a, b in zip(losses, losses[1:])), out
    k, c = map(float, re.search(r"fitted k = ([0-9.]+).*c = ([0-9.]+)", out).groups())
    assert abs(k - 4.0) < 0.05 and abs(c - 0.5) < 0.05, out


def test_readme_cpp_snippets_are_the_tested_files():
    """Each block of "Use from C++" introduced by "From [path](path):" is a
    verbatim part of that file, which the downstream build compiles and
    tests (scripts/test-downstream.sh)."""
    section = readme_section("Use from C++")
    quoted = re.findall(r"\[([\w./-]+)\]\([^)]*\):\n\n```[\w+]+\n(.*?)```", section, re.S)
    assert len(quoted) >= 6, "the C++ section lost its quoted snippets"
    for path, block in quoted:
        with open(os.path.join(ROOT, path)) as f:
            assert block in f.read(), f"README block differs from {path}"
    # The second ds-jit block follows "from the same file".
    jit = re.search(r"from the same file:\n\n```c\+\+\n(.*?)```", section, re.S)
    assert jit, "the README lost the second ds-jit snippet"
    with open(os.path.join(ROOT, "examples/downstream/ds-jit/ds-jit.cpp")) as f:
        assert jit.group(1) in f.read()

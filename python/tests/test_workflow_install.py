"""Installing lucidq like a Python package: cmake --install, pip install ./python, and the type stubs."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

import lucidq
from lucidq import _lucidq

REPO = pathlib.Path(__file__).resolve().parents[2]
STUB = REPO / "python" / "lucidq" / "_lucidq.pyi"
# Imports the installed package from the folder on PYTHONPATH and checks where it came from.
CHECK_SCRIPT = """
import pathlib, sys
import numpy as np
import lucidq, lucid.quantization as Q
where = pathlib.Path(lucidq.__file__).resolve().parent
assert where.parent == pathlib.Path(sys.argv[1]).resolve(), where
assert (where / "py.typed").is_file() and (where / "_lucidq.pyi").is_file()
assert (where / "workflow" / "observer.py").is_file()
assert Q.quantize(np.array([0.1, 9.0], np.float32), 0.02, 3, Q.quint8).tolist() == [8, 255]
print("ok", lucidq.__version__)
"""


def build_dir():
    """The CMake build folder the imported module came from (<build>/python/lucidq), or skip."""
    folder = pathlib.Path(lucidq.__file__).resolve().parents[2]
    if not (folder / "CMakeCache.txt").is_file():
        pytest.skip(f"lucidq was not imported from a CMake build folder ({folder})")
    return folder


def run_check(site):
    result = subprocess.run(
        [sys.executable, "-c", CHECK_SCRIPT, str(site)], capture_output=True, text=True,
        timeout=120, env={"PYTHONPATH": str(site), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok " + lucidq.__version__)


def test_cmake_install_puts_the_package_into_site_packages(tmp_path):
    folder = build_dir()
    result = subprocess.run(
        ["cmake", "--install", str(folder), "--component", "python", "--prefix", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = tmp_path / "lib" / version / "dist-packages"
    assert sorted(p.name for p in site.iterdir()) == ["lucid", "lucidq"]
    assert not list(site.rglob("__pycache__"))
    run_check(site)


def test_pip_install_builds_through_cmake(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not installed (apt-get install python3-pip)")
    folder = build_dir()
    env = dict(os.environ, LUCIDQ_CMAKE_BUILD_DIR=str(folder))  # reuse the configured build: seconds
    target = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(target), str(REPO / "python")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (REPO / "python" / "build").exists()  # setuptools' scratch stays under build/
    assert not list((REPO / "python").glob("*.egg-info"))
    run_check(target)


def pip_install(args, cwd, env):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not installed (apt-get install python3-pip)")
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
         *args, str(REPO / "python")],
        capture_output=True, text=True, timeout=300, cwd=cwd, env=env,
    )


def test_pip_takes_the_build_dir_relative_to_the_current_folder(tmp_path):
    # As a shell runs it: PWD is the folder pip was started in (pip itself runs setup.py in
    # python/), and the build folder is named from there.
    folder = build_dir()
    env = dict(os.environ, LUCIDQ_CMAKE_BUILD_DIR=folder.name, PWD=str(folder.parent))
    result = pip_install(["--target", str(tmp_path / "site")], folder.parent, env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_check(tmp_path / "site")


def test_pip_says_when_the_build_dir_has_no_python_module(tmp_path):
    fake = tmp_path / "build-no-python"
    fake.mkdir()
    (fake / "CMakeCache.txt").write_text("LUCIDQ_BUILD_PYTHON:BOOL=OFF\nCMAKE_BUILD_TYPE:STRING=Release\n")
    env = dict(os.environ, LUCIDQ_CMAKE_BUILD_DIR=str(fake))
    result = pip_install(["--target", str(tmp_path / "site")], tmp_path, env)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"setup.py: {fake} is configured without the Python module, so it has no _lucidq target" in output, output
    assert f"cmake -B {fake} -DLUCIDQ_BUILD_PYTHON=ON" in output
    missing = dict(os.environ, LUCIDQ_CMAKE_BUILD_DIR="no/such/build", PWD=str(tmp_path))
    result = pip_install(["--target", str(tmp_path / "site")], tmp_path, missing)
    assert "LUCIDQ_CMAKE_BUILD_DIR=no/such/build is not a configured CMake build folder" in (
        result.stdout + result.stderr)


def test_cmake_install_of_everything_after_the_build(tmp_path):
    # README: after scripts/demo.sh (or any build of build/release), `cmake --install` needs no
    # further build step: library, headers, CMake package, the CLI and the Python package.
    folder = build_dir()
    cache = (folder / "CMakeCache.txt").read_text()
    if "LUCIDQ_BUILD_TOOLS:BOOL=ON" not in cache:
        pytest.skip(f"{folder} is configured without the CLI")
    result = subprocess.run(["cmake", "--install", str(folder), "--prefix", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "bin" / "lucidq").is_file()
    assert (tmp_path / "include" / "lucid" / "quantization.hpp").is_file()
    assert list(tmp_path.glob("lib*/cmake/lucidq/lucidqConfig.cmake"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    run_check(tmp_path / "lib" / version / "dist-packages")


def test_missing_extension_says_how_to_build_it(tmp_path):
    # The Python files without the compiled module (a build configured without the extension):
    # one ImportError naming the folder and the build command, for both package names.
    import shutil

    for package in ("lucidq", "lucid"):
        shutil.copytree(REPO / "python" / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("_lucidq*.so", "__pycache__"))
    for module in ("lucidq", "lucid.quantization"):
        result = subprocess.run(
            [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=60,
            env={"PYTHONPATH": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        assert result.returncode == 1
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: lucidq: the compiled module _lucidq is missing from "
                               f"{tmp_path / 'lucidq'}"), result.stderr
        assert "scripts/demo.sh" in last and "--target _lucidq" in last
        assert "circular import" not in result.stderr


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names - {"_T", "_QDtypeLike", "_QSchemeLike"}


def runtime_names():
    return {name for name in dir(_lucidq) if not name.startswith("__")} | {"__version__"}


def test_stub_names_match_the_extension():
    stub, runtime = stub_names(), runtime_names()
    # A new binding needs its stub entry in python/lucidq/_lucidq.pyi (`stubgen -p lucidq._lucidq`
    # from Debian's mypy drafts one; check it against the binding's docstring signature).
    assert not runtime - stub, f"in _lucidq but not in the stub: {sorted(runtime - stub)}"
    assert not stub - runtime, f"in the stub but not in _lucidq: {sorted(stub - runtime)}"


def test_stubs_agree_with_the_extension_stubtest(tmp_path):
    # mypy's stubtest compares every signature and attribute with the running module.
    if subprocess.run([sys.executable, "-c", "import mypy.stubtest"], capture_output=True).returncode:
        pytest.skip("mypy is not installed (apt-get install mypy)")
    folder = pathlib.Path(_lucidq.__file__).resolve().parents[1]
    if not (folder / "lucidq" / "_lucidq.pyi").is_file():
        pytest.skip(f"no _lucidq.pyi beside the imported module in {folder} (rebuild)")
    classes = sorted(n for n in dir(_lucidq) if isinstance(getattr(_lucidq, n), type))
    no_constructor = [n for n in classes if "No constructor defined" in _constructor_error(n)]
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text(
        # pybind11 classes have pybind11's metaclass, which a stub cannot name
        "".join(f"lucidq._lucidq.{n}\n" for n in classes if n != "Error")
        # classes made only by the extension (calculate_qparams, observe_range, ...)
        + "".join(f"lucidq._lucidq.{n}.__init__\n" for n in no_constructor)
    )
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\nfollow_imports = silent\ncache_dir = {tmp_path / 'cache'}\n"
        "[mypy-lucidq.workflow.*]\nfollow_imports = skip\n[mypy-torch.*]\nfollow_imports = skip\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", str(config),
         "--allowlist", str(allowlist), "lucidq._lucidq"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(folder), MYPYPATH=str(folder)),
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def _constructor_error(name):
    try:
        getattr(_lucidq, name)()
    except TypeError as error:
        return str(error)
    except Exception:  # constructible (other arguments needed) or a non-TypeError failure
        return ""
    return ""


def _split_top_level(text):
    """Splits "a: int, b: Tuple[int, int] = (1, 2)" at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [part.strip() for part in parts]


def doc_signatures(name, callable_object):
    """The parameter lists pybind11 wrote into the docstring ("*" marks keyword-only), self dropped."""
    signatures = []
    for line in (callable_object.__doc__ or "").splitlines():
        match = re.match(rf"^(?:\d+\. )?{re.escape(name)}\((.*)\) -> ", line)
        if match:
            parameters = [p.split(":")[0].split("=")[0].strip() for p in _split_top_level(match.group(1))]
            signatures.append(tuple(p for p in parameters if p != "self"))
    return signatures


def stub_signature(function):
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args]
    if arguments.kwonlyargs:
        names.append("*")
    names += [a.arg for a in arguments.kwonlyargs]
    return tuple(n for n in names if n not in ("self", "cls"))


def stub_functions():
    """{qualified name: [signatures]} of every function and method in the stub (overloads together)."""
    found = {}
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        scopes = [("", node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            scopes = [(node.name + ".", child) for child in node.body if isinstance(child, ast.FunctionDef)]
        for prefix, function in scopes:
            decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in function.decorator_list}
            if "property" in decorators or "setter" in decorators:
                continue
            found.setdefault(prefix + function.name, []).append(stub_signature(function))
    return found


def test_stub_signatures_match_the_docstrings():
    # pybind11 functions carry no inspectable signature (stubtest cannot compare their
    # parameters), but pybind11 writes each one at the top of the docstring: compare those.
    checked = 0
    for qualified, signatures in stub_functions().items():
        owner, _, name = qualified.rpartition(".")
        if name.startswith("__") or name == "with_args":  # dunders; with_args is Python code
            continue
        runtime = getattr(getattr(_lucidq, owner) if owner else _lucidq, name)
        expected = doc_signatures(name, runtime)
        assert expected, f"{qualified}: no signature in its docstring"
        assert sorted(signatures) == sorted(expected), f"{qualified}: stub {signatures}, module {expected}"
        checked += 1
    print(f"{checked} stub signatures checked against the module")
    assert checked > 50

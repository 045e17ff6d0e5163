"""setuptools driving CMake: `pip install ./python` builds the _lucidq extension and installs lucidq + lucid.

Debian 12 has no scikit-build-core, so this is plain setuptools: build_ext
configures the repository (this folder's parent) with CMake, builds the one
target _lucidq and copies the module into the wheel next to the pure-Python
files. Install (offline: pip must use Debian's setuptools, hence
--no-build-isolation):

    /usr/bin/python3 -m venv --system-site-packages .venv       # a venv that sees Debian's
    .venv/bin/python -m pip install --no-build-isolation ./python   #   numpy / torch
    /usr/bin/python3 -m pip install --no-build-isolation --no-deps --target DIR ./python
    /usr/bin/python3 -m pip install --no-build-isolation --break-system-packages ./python

Which build folder: LUCIDQ_CMAKE_BUILD_DIR when set; otherwise build/release when it is
configured with the Python module for this Python (scripts/demo.sh makes it: the install then
takes seconds); otherwise a fresh build/pip (minutes: the whole library; `pip install -v` shows
the compiler's progress).

Environment:
    LUCIDQ_CMAKE_BUILD_DIR  reuse this configured CMake build folder (absolute, or relative to
                            the current folder or to the repository root), e.g. build/release
    LUCIDQ_CMAKE_ARGS       extra arguments for the CMake configure step of build/pip
    CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default 2)
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


def project_version():
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"project\(lucidq VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("setup.py: no `project(lucidq VERSION x.y.z)` in CMakeLists.txt")
    return match.group(1)


class CMakeExtension(Extension):
    """The _lucidq module, built by CMake rather than by setuptools' compiler."""

    def __init__(self, name):
        super().__init__(name, sources=[])


def cmake_cache(build_dir):
    """{name: value} of build_dir/CMakeCache.txt ({} when there is none)."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return {}
    entries = {}
    for line in cache.read_text(errors="replace").splitlines():
        match = re.match(r"^([A-Za-z_][\w.-]*):[A-Z_]+=(.*)$", line)
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def builds_python_for_this_interpreter(cache):
    """True when the cache configures _lucidq for the Python running this script."""
    if cache.get("LUCIDQ_BUILD_PYTHON", "").upper() not in ("ON", "1", "TRUE", "YES"):
        return False
    configured = cache.get("Python_EXECUTABLE") or cache.get("PYTHON_EXECUTABLE")
    return bool(configured) and os.path.realpath(configured) == os.path.realpath(sys.executable)


def given_build_dir(text):
    """LUCIDQ_CMAKE_BUILD_DIR as a path: absolute, else from the folder pip was started in (PWD:
    pip runs this script in the source folder), else from the repository root."""
    path = pathlib.Path(text).expanduser()
    if path.is_absolute():
        return path
    candidates = [pathlib.Path(os.environ["PWD"]) / path] if os.environ.get("PWD") else []
    candidates += [pathlib.Path.cwd() / path, REPO / path]
    for candidate in candidates:
        if (candidate / "CMakeCache.txt").is_file():
            return candidate.resolve()
    tried = ", ".join(dict.fromkeys(str(c) for c in candidates))
    raise RuntimeError(
        f"setup.py: LUCIDQ_CMAKE_BUILD_DIR={text} is not a configured CMake build folder "
        f"(no CMakeCache.txt in {tried}; expected e.g. build/release after scripts/demo.sh)"
    )


def chosen_build_dir():
    """(folder, configure?): LUCIDQ_CMAKE_BUILD_DIR, else a configured build/release, else build/pip."""
    given = os.environ.get("LUCIDQ_CMAKE_BUILD_DIR")
    if given:
        folder = given_build_dir(given)
        cache = cmake_cache(folder)
        if cache.get("LUCIDQ_BUILD_PYTHON", "").upper() not in ("ON", "1", "TRUE", "YES"):
            raise RuntimeError(
                f"setup.py: {folder} is configured without the Python module, so it has no "
                f"_lucidq target (LUCIDQ_BUILD_PYTHON={cache.get('LUCIDQ_BUILD_PYTHON', 'unset')};"
                f" expected ON: `cmake -B {folder} -DLUCIDQ_BUILD_PYTHON=ON` adds it, "
                "scripts/demo.sh configures build/release so)"
            )
        return folder, False
    release = REPO / "build" / "release"
    if builds_python_for_this_interpreter(cmake_cache(release)):
        print(f"setup.py: reusing the configured build {release}", flush=True)
        return release, False
    print(f"setup.py: configuring and building {REPO / 'build' / 'pip'} (minutes)", flush=True)
    return REPO / "build" / "pip", True


class CMakeBuild(build_ext):
    """Configures (a fresh build/pip only) and builds the _lucidq target."""

    def build_extension(self, ext):
        if shutil.which("cmake") is None:
            raise RuntimeError(
                "setup.py: cmake is not installed (scripts/install-deps.sh build installs it)"
            )
        build_dir, configure_it = chosen_build_dir()
        if configure_it:
            configure = [
                "cmake", "-S", str(REPO), "-B", str(build_dir), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                "-DLUCIDQ_BUILD_PYTHON=ON", "-DLUCIDQ_BUILD_TESTS=OFF",
                "-DLUCIDQ_BUILD_TOOLS=OFF",
            ] + shlex.split(os.environ.get("LUCIDQ_CMAKE_ARGS", ""))
            subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", "_lucidq", "-j", jobs], check=True
        )
        built = sorted((build_dir / "python" / "lucidq").glob("_lucidq*.so"))
        if not built:
            raise RuntimeError(
                f"setup.py: the build made no _lucidq*.so in {build_dir}/python/lucidq"
            )
        destination = pathlib.Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], destination)


# setuptools' scratch files (build/, *.egg-info) go under the repository's build/, not python/.
SCRATCH = REPO / "build" / "setuptools"
SCRATCH.mkdir(parents=True, exist_ok=True)

setup(
    name="lucidq",
    version=project_version(),
    description="Linear quantization of tensors and PyTorch models (lucid.quantization)",
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
    packages=find_packages(where=str(HERE), include=["lucidq", "lucidq.*", "lucid", "lucid.*"]),
    package_dir={"": "."},
    package_data={"lucidq": ["py.typed", "*.pyi"]},
    ext_modules=[CMakeExtension("lucidq._lucidq")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(SCRATCH)}, "egg_info": {"egg_base": str(SCRATCH)}},
    zip_safe=False,
)

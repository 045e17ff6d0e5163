"""setuptools driving CMake: `pip install ./python` builds the _lucidq extension and installs lucidq + lucid.

Debian 12 has no scikit-build-core, so this is plain setuptools: build_ext
configures the repository (this folder's parent) with CMake, builds the one
target _lucidq and copies the module into the wheel next to the pure-Python
files. Install (offline: pip must use Debian's setuptools, hence
--no-build-isolation):

    pip install --no-build-isolation ./python                    # in a venv
    python3 -m venv --system-site-packages .venv                # a venv that sees Debian's
    .venv/bin/pip install --no-build-isolation ./python          #   numpy / torch
    pip install --no-build-isolation --break-system-packages ./python   # Debian's python itself

Environment:
    LUCIDQ_CMAKE_BUILD_DIR  reuse this configured CMake build folder (e.g. build/release)
                            instead of a fresh one under build/pip (incremental, seconds)
    LUCIDQ_CMAKE_ARGS       extra arguments for the CMake configure step
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


class CMakeBuild(build_ext):
    """Configures (unless LUCIDQ_CMAKE_BUILD_DIR is given) and builds the _lucidq target."""

    def build_extension(self, ext):
        if shutil.which("cmake") is None:
            raise RuntimeError(
                "setup.py: cmake is not installed (scripts/install-deps.sh build installs it)"
            )
        reuse = os.environ.get("LUCIDQ_CMAKE_BUILD_DIR")
        build_dir = pathlib.Path(reuse).resolve() if reuse else REPO / "build" / "pip"
        if not reuse:
            configure = [
                "cmake", "-S", str(REPO), "-B", str(build_dir), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                "-DLUCIDQ_BUILD_PYTHON=ON", "-DLUCIDQ_BUILD_TESTS=OFF",
                "-DLUCIDQ_BUILD_TOOLS=OFF",
            ] + shlex.split(os.environ.get("LUCIDQ_CMAKE_ARGS", ""))
            subprocess.run(configure, check=True)
        elif not (build_dir / "CMakeCache.txt").is_file():
            raise RuntimeError(
                f"setup.py: LUCIDQ_CMAKE_BUILD_DIR={reuse} is not a configured CMake build folder"
            )
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

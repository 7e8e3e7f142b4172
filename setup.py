"""Builds the `feeder` Python package with the project's own CMake build (see pyproject.toml).

The version comes from include/feeder/version.h, the one home of the version. The extension is
built by CMake with only the library parts it needs (no LibTorch, no CLI, no tests) and written
straight into the folder setuptools packages; python/feeder/__init__.py is the pure-Python part.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "include" / "feeder" / "version.h").read_text()
    match = re.search(r'kVersion = "([0-9]+\.[0-9]+\.[0-9]+)"', text)
    if not match:
        sys.exit("setup.py: no kVersion = \"X.Y.Z\" in include/feeder/version.h")
    return match.group(1)


class CMakeBuild(build_ext):
    """Configures and builds the `_feeder` target with CMake + Ninja in setuptools' temporary folder."""

    def build_extension(self, ext):
        package_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        # A folder beside build/, at the same depth: with ccache's base_dir at the source root
        # (CMakeLists.txt), a file compiled with the same flags in build/ is a cache hit here, so
        # `pip install` in a tree that setup.sh has built compiles almost nothing again.
        build_dir = ROOT / "build-pip"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DFEEDER_WITH_TORCH=OFF", "-DFEEDER_CLI=OFF", "-DFEEDER_BENCH=OFF", "-DFEEDER_TESTS=OFF",
            "-DFEEDER_INSTALL=OFF", "-DFEEDER_PYTHON=ON",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DFEEDER_PYTHON_PACKAGE_DIR={package_dir}",
        ]
        try:  # pybind11 from the build environment (pip's); else CMake finds the system's (pybind11-dev)
            import pybind11
            configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass
        jobs = str(os.cpu_count() or 1)
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_feeder", "-j", jobs], check=True)


setup(
    version=project_version(),
    packages=["feeder"],
    package_dir={"feeder": "python/feeder"},
    ext_modules=[Extension("feeder._feeder", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build folder, apart from the CMake builds in build/
    options={"build": {"build_base": "build/pip"}},
    zip_safe=False,
)

"""The installed C++ library and CMake package: find_package(aoe_native) works
and the embedding example builds, runs and tunes."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import aoe_native

EXAMPLE = Path(__file__).resolve().parents[1] / "cpp" / "examples"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cpp_example_builds_and_tunes(tmp_path):
    cmake_dir = Path(aoe_native.cmake_dir())
    assert (cmake_dir / "aoe_nativeConfig.cmake").is_file()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(tmp_path), *generator, f"-Daoe_native_DIR={cmake_dir}",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(tmp_path)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(tmp_path / "tune_example")], check=True, capture_output=True, text=True).stdout
    valid = int(re.search(r"space: (\d+) valid of 125", out).group(1))
    evals, best = re.search(r"auto: (\d+) evaluations, best ([\d.]+)", out).groups()
    optimum = float(re.search(r"exhaustive optimum: ([\d.]+)", out).group(1))
    assert 0 < valid < 125 and int(evals) == 60
    assert float(best) >= optimum

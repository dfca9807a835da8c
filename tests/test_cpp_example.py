"""The installed C++ library and CMake package: find_package(aoe_native) works
and the embedding example builds, runs and tunes."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import aoe_native
from aoe_native.ascend.platforms import is_builtin

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


_BAD_PLATFORM = r"""
#include <cstdio>
#include <stdexcept>
#include "aoe_native/ascend/cost_model.hpp"

// A Platform filled in by hand and left incomplete must be refused, not divided by.
int main() {
  aoe::ascend::Platform p;
  p.name = "hand-made";
  p.cube_cores = 0;
  try {
    aoe::ascend::make_op_model({"MatMul", {{64, 64}, {64, 64}}}, p);
    std::puts("accepted");
  } catch (const std::invalid_argument& e) {
    std::printf("refused: %s\n", e.what());
  }
  return 0;
}
"""


def _build_and_run(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """Compiles `source` against the installed library (find_package) and runs it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.cpp").write_text(source)
    (tmp_path / "src" / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(probe LANGUAGES CXX)\n"
        "find_package(aoe_native 0.1 REQUIRED)\nadd_executable(probe main.cpp)\n"
        "target_link_libraries(probe PRIVATE aoe_native::core)\n")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(tmp_path / "src"), "-B", str(tmp_path / "b"), *generator,
                    f"-Daoe_native_DIR={aoe_native.cmake_dir()}"], check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(tmp_path / "b")], check=True, capture_output=True, text=True)
    return subprocess.run([str(tmp_path / "b" / "probe")], capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cpp_cost_model_refuses_a_hand_made_platform_it_cannot_use(tmp_path):
    p = _build_and_run(tmp_path, _BAD_PLATFORM)
    assert p.returncode == 0, p.stderr  # no crash
    assert p.stdout.startswith("refused: platform 'hand-made': '") and "must be" in p.stdout


_THROWING_OBJECTIVE = r"""
#include <cstdio>
#include <stdexcept>
#include "aoe_native/search_space.hpp"
#include "aoe_native/tuner.hpp"

// A device call that throws now and then: those configurations fail, the run goes on.
class Flaky : public aoe::Objective {
 public:
  size_t max_batch() const override { return 1; }
  void evaluate(const aoe::SearchSpace& s, const aoe::ConfigId* ids, size_t n, double* out,
                std::string*) override {
    for (size_t i = 0; i < n; ++i) {
      if (s.value(ids[i], 0) % 3 == 0) throw std::runtime_error("device lost at x=" + std::to_string(s.value(ids[i], 0)));
      out[i] = double((s.value(ids[i], 0) - 7) * (s.value(ids[i], 0) - 7));
    }
  }
};

int main() {
  std::vector<int64_t> xs;
  for (int64_t x = 0; x < 20; ++x) xs.push_back(x);
  aoe::SearchSpace space({"x"}, {xs}, {});
  Flaky f;
  aoe::TuneOptions opt;
  opt.strategy = "exhaustive";
  const aoe::TuneResult r = aoe::tune(space, f, opt);
  std::printf("evaluations %zu failed %zu best %lld value %.1f\n", r.history.size(), r.failed,
              (long long)space.value(*r.best, 0), r.best_value);
  std::printf("first error: %s\n", r.errors.at(0).second.c_str());
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cpp_objective_that_throws_fails_its_configurations_and_the_run_goes_on(tmp_path):
    p = _build_and_run(tmp_path, _THROWING_OBJECTIVE)
    assert p.returncode == 0, p.stderr  # before: terminate with the exception, results lost
    assert "evaluations 20 failed 7 best 7 value 0.0" in p.stdout
    assert "first error: objective raised: device lost at x=0" in p.stdout


_BUILTIN_SOC = r"""
#include <cstdio>
#include <stdexcept>
#include "aoe_native/ascend/cost_model.hpp"
#include "aoe_native/tuner.hpp"

// A compiler picks a MatMul tiling for a built-in SoC without any file or Python.
int main() {
  const aoe::ascend::Platform p = aoe::ascend::builtin_platform("Ascend910B3");
  auto model = aoe::ascend::make_op_model({"MatMul", {{1024, 1024}, {1024, 1024}}}, p);
  aoe::ascend::CostObjective objective(model);
  aoe::TuneOptions opt;
  opt.strategy = "exhaustive";
  const aoe::TuneResult r = aoe::tune(model->space(), objective, opt);
  std::printf("socs %zu cores %d best %.6f baseline %.6f\n", aoe::ascend::builtin_soc_versions().size(),
              p.cube_cores, r.best_value, model->evaluate(model->spec().baseline.data(), nullptr));
  try {
    aoe::ascend::builtin_platform("Ascend999");
  } catch (const std::invalid_argument& e) {
    std::printf("refused: %s\n", e.what());
  }
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cpp_knows_the_builtin_socs_and_tunes_as_python_does(tmp_path):
    p = _build_and_run(tmp_path, _BUILTIN_SOC)
    assert p.returncode == 0, p.stderr
    n, cores, best, base = re.search(r"socs (\d+) cores (\d+) best ([\d.]+) baseline ([\d.]+)", p.stdout).groups()
    builtin = [s for s in aoe_native.soc_versions() if is_builtin(s)]  # (other tests load user SoCs)
    assert int(n) == len(builtin) and int(cores) == aoe_native.platform("Ascend910B3")["cube_cores"]
    py = aoe_native.tune_op("MatMul", [[1024, 1024], [1024, 1024]], soc_version="Ascend910B3", strategy="exhaustive")
    assert float(best) == pytest.approx(py.time_us, rel=1e-5)
    assert float(base) == pytest.approx(py.baseline_us, rel=1e-5)
    assert "refused: unknown SoC 'Ascend999'; valid soc_version values: Ascend910B1" in p.stdout

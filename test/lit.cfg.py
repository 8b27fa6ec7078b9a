# lit configuration of the MLIR-AD test suite.
import glob
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MLIR-AD"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".c"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ad_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ad_tools_dir, append_path=False)

runtime_libs = ",".join(
    os.path.join(config.runtime_lib_dir, lib)
    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")
)
# Vectorized math calls glibc's libmvec (ad-vector-math).
runtime_libs += "".join("," + path for path in sorted(
    glob.glob("/usr/lib/*-linux-gnu/libmvec.so.1"))[:1])
# Parallel loops (ad-parallelize) call LLVM's OpenMP runtime.
libomp = os.path.join(config.runtime_lib_dir, "libomp.so.5")
if os.path.exists(libomp):
    runtime_libs += "," + libomp
config.substitutions.append(
    (
        "%run",
        "mlir-runner -e main -entry-point-result=void -shared-libs=" + runtime_libs,
    )
)
# Python scripts of utils/ run with the interpreter CMake found (Debian's,
# which has numpy).
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%utils", os.path.join(config.ad_src_root, "utils")))

llvm_config.add_tool_substitutions(
    ["ad-opt", "ad-capi-test", "mlir-runner", "FileCheck"],
    [config.ad_tools_dir, config.llvm_tools_dir],
)

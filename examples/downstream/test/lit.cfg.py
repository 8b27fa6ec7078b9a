# lit configuration of the downstream example's tests: ds-opt on FileCheck
# and -verify-diagnostics tests, and programs lowered to LLVM and run under
# mlir-runner (%run).
import glob
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MLIR-AD downstream example"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ds_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

runtime_libs = ",".join(
    os.path.join(config.runtime_lib_dir, lib)
    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")
)
# Vectorized math calls glibc's libmvec (ad-vector-math).
runtime_libs += "".join("," + path for path in sorted(
    glob.glob("/usr/lib/*-linux-gnu/libmvec.so.1"))[:1])
config.substitutions.append(
    (
        "%run",
        "mlir-runner -e main -entry-point-result=void -shared-libs=" + runtime_libs,
    )
)

llvm_config.add_tool_substitutions(
    ["ds-opt", "ds-jit", "mlir-runner", "FileCheck"],
    [config.ds_tools_dir, config.llvm_tools_dir],
)

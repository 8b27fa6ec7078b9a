//===- MlirAdModule.cpp - the _mlir_ad extension module -------------------===//
//
// pybind11 bindings of the MLIR-AD runtime: parse programs, build entry
// points, and call them on numpy arrays and Python numbers. Arrays that are
// already contiguous and of the right dtype are passed without a copy;
// results are numpy arrays owning the buffers the compiled code allocated.
//
// Runtime errors come back as values and are raised here, in module code:
// no C++ exception ever crosses MLIR or LLVM code.
//
//===----------------------------------------------------------------------===//

#include "ad/Runtime/Runtime.h"

#include "llvm/ADT/APFloat.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <malloc.h>

namespace py = pybind11;
using namespace mlir::ad::runtime;

namespace {

/// The process-wide runtimes: sequential code, and code whose parallel
/// loops run on OpenMP threads. They are never destroyed: compiled code may
/// still be referenced from Python objects during interpreter shutdown.
Runtime &getRuntime(bool parallel = false) {
  static Runtime *sequential = Runtime::create().release();
  if (!parallel)
    return *sequential;
  static Runtime *threaded = [] {
    RuntimeOptions options;
    options.parallel = true;
    return Runtime::create(std::move(options)).release();
  }();
  return *threaded;
}

/// The Python type of MLIR diagnostics (set at module initialization).
PyObject *compileErrorType = nullptr;

/// Raises `error` as CompileError, TypeError or ValueError, with `context`
/// before the message when it is not empty.
[[noreturn]] void raise(llvm::Error error, const std::string &context = "") {
  auto [kind, message] = takeError(std::move(error));
  if (!context.empty())
    message = context + ": " + message;
  switch (kind) {
  case ErrorKind::Compile:
    PyErr_SetString(compileErrorType, message.c_str());
    throw py::error_already_set();
  case ErrorKind::Type:
    throw py::type_error(message);
  case ErrorKind::Value:
    throw py::value_error(message);
  }
  throw py::value_error(message);
}

template <typename T>
T unwrap(llvm::Expected<T> value, const std::string &context = "") {
  if (!value)
    raise(value.takeError(), context);
  return std::move(*value);
}

/// The numpy dtype of an element kind (none for bf16).
std::optional<py::dtype> getDtype(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return py::dtype("float16");
  case ElementKind::F32:
    return py::dtype::of<float>();
  case ElementKind::F64:
    return py::dtype::of<double>();
  case ElementKind::I1:
    return py::dtype::of<bool>();
  case ElementKind::I8:
    return py::dtype::of<int8_t>();
  case ElementKind::I16:
    return py::dtype::of<int16_t>();
  case ElementKind::I32:
    return py::dtype::of<int32_t>();
  case ElementKind::I64:
  case ElementKind::Index:
    return py::dtype::of<int64_t>();
  case ElementKind::BF16:
    return std::nullopt;
  }
  return std::nullopt;
}

/// A float scalar rounded to f16 or bf16 bits.
uint16_t toHalfBits(double value, ElementKind kind) {
  llvm::APFloat converted(value);
  bool losesInfo;
  converted.convert(kind == ElementKind::F16 ? llvm::APFloat::IEEEhalf()
                                             : llvm::APFloat::BFloat(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return (uint16_t)converted.bitcastToAPInt().getZExtValue();
}

std::string describeObject(py::handle object) {
  if (py::isinstance<py::array>(object)) {
    py::array array = py::reinterpret_borrow<py::array>(object);
    std::string shape = py::str(object.attr("shape"));
    return "a " + std::string(py::str(array.dtype())) + " array of shape " +
           shape;
  }
  return "a " + std::string(py::str(object.get_type().attr("__name__")));
}

/// The values an integer element kind holds (i1: 0 and 1).
std::pair<long long, long long> getIntegerRange(ElementKind kind) {
  switch (kind) {
  case ElementKind::I1:
    return {0, 1};
  case ElementKind::I8:
    return {INT8_MIN, INT8_MAX};
  case ElementKind::I16:
    return {INT16_MIN, INT16_MAX};
  case ElementKind::I32:
    return {INT32_MIN, INT32_MAX};
  default:
    return {INT64_MIN, INT64_MAX};
  }
}

/// Converts a Python number to a scalar argument of `type`.
/// Names a position of an entry's arguments for messages: "argument 2", or
/// for a vjp's (jvp's) trailing inputs "cotangent 0" ("tangent 0").
std::string describePosition(size_t index, size_t numFunctionArgs,
                             const std::string &trailing) {
  if (index < numFunctionArgs)
    return "argument " + std::to_string(index);
  return trailing + " " + std::to_string(index - numFunctionArgs);
}

Argument toScalar(py::handle object, const ValueType &type,
                  const std::string &position) {
  auto fail = [&]() -> Argument {
    throw py::type_error(position + ": expected " +
                         (isFloat(type.element) ? "a number" : "an integer") +
                         " (" + type.str() + "), got " +
                         describeObject(object));
  };
  if (py::isinstance<py::array>(object) &&
      py::reinterpret_borrow<py::array>(object).ndim() != 0)
    return fail();
  Argument arg;
  arg.element = type.element;
  if (isFloat(type.element)) {
    // Python floats and ints are the common case: no further checks.
    bool plain = PyFloat_CheckExact(object.ptr()) ||
                 PyLong_CheckExact(object.ptr());
    if (!plain &&
        (py::isinstance<py::str>(object) || py::isinstance<py::bytes>(object) ||
         PyComplex_Check(object.ptr()) ||
         py::isinstance(object, py::module_::import("numpy").attr(
                                    "complexfloating"))))
      return fail();
    double value = PyFloat_AsDouble(object.ptr());
    if (value == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return fail();
    }
    switch (type.element) {
    case ElementKind::F64:
      arg.scalar.f64 = value;
      break;
    case ElementKind::F32:
      arg.scalar.f32 = (float)value;
      break;
    default:
      arg.scalar.bits16 = toHalfBits(value, type.element);
    }
    return arg;
  }
  // Integers: Python ints, numpy integers and bools; never a float.
  if (type.element == ElementKind::I1 &&
      (py::isinstance<py::bool_>(object) ||
       py::isinstance(object, py::module_::import("numpy").attr("bool_"))))
    return Argument::ofI64(object.cast<bool>(), type.element);
  PyObject *integer = PyNumber_Index(object.ptr());
  if (!integer) {
    PyErr_Clear();
    return fail();
  }
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(integer, &overflow);
  Py_DECREF(integer);
  auto [lowest, highest] = getIntegerRange(type.element);
  if (overflow || value < lowest || value > highest)
    throw py::value_error(position + ": " +
                          std::string(py::str(object)) +
                          " is out of range for " + type.str());
  return Argument::ofI64(value, type.element);
}

/// Converts `object` to a buffer argument of `type`. For tensors, aligned
/// C-contiguous arrays of the right dtype are borrowed (never written);
/// other arrays of that dtype and non-arrays (lists, numbers) are converted
/// into a copy that `keepAlive` holds. A memref is the caller's memory the
/// function may write: it must be a writeable aligned C-contiguous array of
/// the right dtype, since writes into a copy would be lost.
Argument toBuffer(py::handle object, const ValueType &type,
                  const std::string &position,
                  std::vector<py::object> &keepAlive) {
  // Messages are built on the error paths only: this runs on every call.
  auto what = [&] { return position; };
  std::optional<py::dtype> dtype = getDtype(type.element);
  if (!dtype)
    throw py::type_error(what() + " has type " + type.str() +
                         ", which numpy cannot hold (no bfloat16 dtype)");
  auto dtypeName = [&] { return std::string(py::str(*dtype)); };
  py::array array;
  if (py::isinstance<py::array>(object)) {
    array = py::reinterpret_borrow<py::array>(object);
    if (!array.dtype().equal(*dtype))
      throw py::type_error(what() + ": expected an array of dtype " + dtypeName() + " (" +
                           type.str() + "), got " + describeObject(object) +
                           "; convert it with .astype(numpy." + dtypeName() +
                           ")");
  } else if (type.tensor) {
    if (py::isinstance<py::str>(object) || object.is_none())
      throw py::type_error(what() + ": expected an array (" + type.str() +
                           "), got " + describeObject(object));
    py::module_ numpy = py::module_::import("numpy");
    try {
      array = numpy.attr("asarray")(object);
    } catch (py::error_already_set &) {
      throw py::type_error(what() + ": cannot convert " +
                           describeObject(object) + " to " + type.str());
    }
    // Only conversions that keep the values: numbers to floats (rounded),
    // integers and bools to integers and bools when every value fits
    // (never strings, complex numbers, or floats truncated to integers).
    char have = py::str(array.dtype().attr("kind")).cast<std::string>()[0];
    bool toFloat = isFloat(type.element);
    if (std::string(toFloat ? "fiub" : "iub").find(have) == std::string::npos)
      throw py::type_error(what() + ": expected " + type.str() + ", got " +
                           describeObject(object) + " holding " +
                           std::string(py::str(array.dtype())) +
                           " values, which do not convert exactly");
    py::array converted = numpy.attr("asarray")(array, *dtype);
    if (!toFloat &&
        !numpy.attr("array_equal")(converted, array).cast<bool>())
      throw py::value_error(what() + ": " + describeObject(object) +
                            " holds values out of range for " + type.str());
    array = converted;
  } else {
    throw py::type_error(what() + ": expected a writeable " + dtypeName() +
                         " array (" + type.str() + "), got " +
                         describeObject(object));
  }
  if (array.ndim() != type.getRank())
    throw py::value_error(what() + ": expected " + type.str() + " (rank " +
                          std::to_string(type.getRank()) + "), got " +
                          describeObject(array));
  bool usable = (array.flags() & py::array::c_style) &&
                (array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if (!type.tensor) {
    if (!usable || !array.writeable())
      throw py::value_error(what() + " is a memref the function may write: "
                            "pass a writeable, aligned, C-contiguous array "
                            "(a copy would lose the writes)");
  } else if (!usable) {
    // A fresh array is C-contiguous and aligned.
    array = py::module_::import("numpy").attr("array")(
        array, py::arg("copy") = true, py::arg("order") = "C");
  }
  if (!array.is(object))
    keepAlive.push_back(array);
  std::vector<int64_t> sizes(array.shape(), array.shape() + array.ndim());
  // Tensor arguments are read-only in the compiled code (they are marked
  // bufferization.writable = false), so read-only arrays are fine.
  return Argument::ofBuffer(type.element, const_cast<void *>(array.data()),
                            sizes);
}

/// A result as a Python number or a numpy array owning its buffer.
py::object toPython(Result &result) {
  if (!result.shaped) {
    switch (result.element) {
    case ElementKind::I1:
      return py::bool_(result.scalar.i8 & 1);
    case ElementKind::I8:
      return py::int_(result.scalar.i8);
    case ElementKind::I16:
      return py::int_(result.scalar.i16);
    case ElementKind::I32:
      return py::int_(result.scalar.i32);
    case ElementKind::I64:
    case ElementKind::Index:
      return py::int_(result.scalar.i64);
    default:
      return py::float_(result.getScalarAsDouble());
    }
  }
  std::optional<py::dtype> dtype = getDtype(result.element);
  if (!dtype)
    throw py::type_error("a result has element type bf16, which numpy "
                         "cannot hold");
  size_t itemSize = getByteWidth(result.element);
  std::vector<py::ssize_t> shape(result.sizes.begin(), result.sizes.end());
  std::vector<py::ssize_t> strides;
  for (int64_t stride : result.strides)
    strides.push_back(stride * (py::ssize_t)itemSize);
  void *data = result.data;
  py::capsule owner(result.release(), [](void *p) { std::free(p); });
  return py::array(*dtype, shape, strides, data, owner);
}

/// A program held by Python.
struct PyProgram {
  std::shared_ptr<Program> program;
};

/// An entry point held by Python, with a description for messages.
struct PyEntry {
  std::shared_ptr<EntryPoint> entry;
  std::string description;
  /// The function's own arguments (a vjp's further inputs are cotangents,
  /// a jvp's or hvp's tangents).
  size_t numFunctionArgs;
  /// What the further inputs are called in messages.
  std::string trailingName;

  py::tuple call(py::args args) const {
    const Signature &signature = entry->getSignature();
    if (args.size() != signature.inputs.size())
      throw py::type_error(description + " takes " +
                           std::to_string(signature.inputs.size()) +
                           " arguments, got " + std::to_string(args.size()));
    std::vector<py::object> keepAlive;
    llvm::SmallVector<Argument, 8> converted;
    try {
      for (size_t i = 0; i < args.size(); ++i) {
        const ValueType &type = signature.inputs[i];
        std::string position =
            describePosition(i, numFunctionArgs, trailingName);
        converted.push_back(type.shaped
                                ? toBuffer(args[i], type, position, keepAlive)
                                : toScalar(args[i], type, position));
      }
    } catch (py::type_error &e) {
      throw py::type_error(description + ": " + e.what());
    } catch (py::value_error &e) {
      throw py::value_error(description + ": " + e.what());
    }
    std::vector<Result> results;
    llvm::Error error = [&] {
      py::gil_scoped_release release;
      return entry->call(converted, results);
    }();
    if (error)
      raise(std::move(error), description);
    py::tuple tuple(results.size());
    for (size_t i = 0; i < results.size(); ++i)
      tuple[i] = toPython(results[i]);
    return tuple;
  }
};

py::tuple describeTypes(const std::vector<ValueType> &types) {
  py::tuple tuple(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const ValueType &type = types[i];
    py::object shape = py::none();
    if (type.shaped) {
      py::list dims;
      for (int64_t size : type.shape)
        dims.append(size == ValueType::kDynamic ? py::object(py::none())
                                                : py::object(py::int_(size)));
      shape = py::tuple(dims);
    }
    std::optional<py::dtype> dtype = getDtype(type.element);
    tuple[i] = py::make_tuple(getName(type.element).str(), shape, type.str(),
                              dtype ? py::object(*dtype) : py::none(),
                              type.isDifferentiable());
  }
  return tuple;
}

EntryKind parseKind(const std::string &kind) {
  if (kind == "call")
    return EntryKind::Call;
  if (kind == "grad")
    return EntryKind::Grad;
  if (kind == "value_and_grad")
    return EntryKind::ValueAndGrad;
  if (kind == "vjp")
    return EntryKind::Vjp;
  if (kind == "jvp")
    return EntryKind::Jvp;
  if (kind == "hvp")
    return EntryKind::Hvp;
  throw py::value_error("unknown entry kind '" + kind + "'");
}

} // namespace

/// Large buffers (tapes, gradients) are allocated and freed on every call.
/// glibc's defaults serve each from fresh mmap'ed pages and give them back on
/// free (or trim the heap), so every call faults its pages in again: the
/// gradient of a 10^6-element loop took 41 ms instead of 0.6 ms here. Keep
/// blocks up to 32 MB in the heap and up to 256 MB of free heap mapped.
/// MLIR_AD_KEEP_MALLOC_SETTINGS=1 leaves the process's settings alone.
static void tuneMalloc() {
  const char *keep = std::getenv("MLIR_AD_KEEP_MALLOC_SETTINGS");
  if (keep && *keep && std::string(keep) != "0")
    return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

PYBIND11_MODULE(_mlir_ad, m) {
  m.doc() = "MLIR-AD runtime bindings (use the mlir_ad package)";
  tuneMalloc();
  static py::exception<std::runtime_error> compileError(m, "CompileError");
  compileErrorType = compileError.ptr();

  py::class_<PyProgram>(m, "Program")
      .def_property_readonly("function_names",
                             [](const PyProgram &self) {
                               std::vector<std::string> names(
                                   self.program->getFunctionNames().begin(),
                                   self.program->getFunctionNames().end());
                               return names;
                             })
      .def("signature",
           [](const PyProgram &self, const std::string &name) {
             Signature signature =
                 unwrap(self.program->getFunctionSignature(name));
             return py::make_tuple(describeTypes(signature.inputs),
                                   describeTypes(signature.results));
           })
      .def("differentiable_arguments",
           [](const PyProgram &self, const std::string &name) {
             return unwrap(self.program->getDifferentiableArguments(name));
           })
      .def("entry", [](PyProgram &self, const std::string &kind,
                       const std::string &name, std::vector<int64_t> wrt) {
        EntryKind entryKind = parseKind(kind);
        // Compilation takes a while; other Python threads may run.
        std::shared_ptr<EntryPoint> entry = unwrap([&] {
          py::gil_scoped_release release;
          return self.program->getEntryPoint(entryKind, name, wrt);
        }());
        std::string description = kind == "call"
                                      ? "@" + name
                                      : kind + " of @" + name;
        size_t numFunctionArgs = entry->getSignature().inputs.size();
        if (entryKind == EntryKind::Vjp || entryKind == EntryKind::Jvp ||
            entryKind == EntryKind::Hvp)
          numFunctionArgs =
              unwrap(self.program->getFunctionSignature(name)).inputs.size();
        return PyEntry{entry, description, numFunctionArgs,
                       entryKind == EntryKind::Vjp ? "cotangent" : "tangent"};
      });

  py::class_<PyEntry>(m, "Entry")
      .def("__call__", &PyEntry::call)
      .def_property_readonly("description",
                             [](const PyEntry &self) { return self.description; })
      .def_property_readonly("input_types",
                             [](const PyEntry &self) {
                               return describeTypes(
                                   self.entry->getSignature().inputs);
                             })
      .def_property_readonly("result_types", [](const PyEntry &self) {
        return describeTypes(self.entry->getSignature().results);
      });

  m.def(
      "parse",
      [](const std::string &source, const std::string &name, bool parallel) {
        std::shared_ptr<Program> program = unwrap([&] {
          py::gil_scoped_release release;
          return getRuntime(parallel).parse(source, name);
        }());
        return PyProgram{program};
      },
      py::arg("source"), py::arg("name") = "<source>",
      py::arg("parallel") = false);
  m.def("num_compilations", [] {
    return getRuntime(false).getNumCompilations() +
           getRuntime(true).getNumCompilations();
  });
  m.def("clear_cache", [] {
    getRuntime(false).clearCache();
    getRuntime(true).clearCache();
  });
}

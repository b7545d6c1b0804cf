#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>
namespace py = pybind11;

struct MyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

PYBIND11_MODULE(pbmod, m) {
  m.def("noop", [] {});

  m.def("sum_f32", [](py::array_t<float, py::array::c_style | py::array::forcecast> a) {
    if (a.ndim() != 1) throw py::value_error("expected 1-D array");
    const float* p = a.data();
    const py::ssize_t n = a.shape(0);
    double s = 0.0;
    {
      py::gil_scoped_release rel;
      for (py::ssize_t i = 0; i < n; ++i) s += p[i];
    }
    return s;
  });

  // generic iterable (list or numpy object array); each element converted to std::string
  m.def("count_strings", [](py::iterable seq) {
    size_t total = 0;
    for (py::handle h : seq) total += h.cast<std::string>().size();
    return total;
  });
  // idiomatic STL caster variant
  m.def("count_strings_vec", [](const std::vector<std::string>& v) {
    size_t total = 0;
    for (auto& s : v) total += s.size();
    return total;
  });

  m.def("call_back", [](py::function f, long n) {
    py::gil_scoped_release rel;
    for (long i = 0; i < n; ++i) {
      py::gil_scoped_acquire acq;
      f(i);
    }
  });

  // exception translation
  py::register_exception<MyError>(m, "MyError", PyExc_RuntimeError);
  m.def("raise_value", [](std::string msg) { throw py::value_error(msg); });
  m.def("raise_invalid_arg", [](std::string msg) { throw std::invalid_argument(msg); });
  m.def("raise_fnf", [](std::string path) {
    py::set_error(PyExc_FileNotFoundError, ("no such file: " + path).c_str());
    throw py::error_already_set();
  });
  m.def("raise_custom", [](std::string msg) { throw MyError(msg); });
}

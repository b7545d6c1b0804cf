#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <vector>
namespace nb = nanobind;

struct MyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

NB_MODULE(nbmod, m) {
  m.def("noop", [] {});

  m.def("sum_f32", [](nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu> a) {
    const float* p = a.data();
    const size_t n = a.shape(0);
    double s = 0.0;
    {
      nb::gil_scoped_release rel;
      for (size_t i = 0; i < n; ++i) s += p[i];
    }
    return s;
  });

  m.def("count_strings", [](nb::iterable seq) {
    size_t total = 0;
    for (nb::handle h : seq) total += nb::cast<std::string>(h).size();
    return total;
  });
  m.def("count_strings_vec", [](const std::vector<std::string>& v) {
    size_t total = 0;
    for (auto& s : v) total += s.size();
    return total;
  });

  m.def("call_back", [](nb::callable f, long n) {
    nb::gil_scoped_release rel;
    for (long i = 0; i < n; ++i) {
      nb::gil_scoped_acquire acq;
      f(i);
    }
  });

  static nb::exception<MyError> my_exc(m, "MyError", PyExc_RuntimeError);
  m.def("raise_value", [](std::string msg) { throw nb::value_error(msg.c_str()); });
  m.def("raise_invalid_arg", [](std::string msg) { throw std::invalid_argument(msg); });
  m.def("raise_fnf", [](std::string path) {
    PyErr_SetString(PyExc_FileNotFoundError, ("no such file: " + path).c_str());
    throw nb::python_error();
  });
  m.def("raise_custom", [](std::string msg) { throw MyError(msg); });
}

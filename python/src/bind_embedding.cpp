// Bindings of the row-wise quantized embedding tables (embedding.hpp).
#include <string>

#include "common.hpp"
#include "lucid/quantization/embedding.hpp"

namespace lucidq_python {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Q::Error(message);
}

py::array_t<std::int64_t> index_array(py::handle x, const char* what) {
  py::array array = py::module_::import("numpy").attr("asarray")(x);
  if (array.dtype().kind() != 'i' && array.dtype().kind() != 'u')
    fail(std::string(what) + " has dtype " + py::str(array.dtype()).cast<std::string>() +
         " (expected integers)");
  if (array.ndim() > 1 && std::string(what).find("offsets") != std::string::npos)
    fail(std::string(what) + " must be 1-D");
  return py::module_::import("numpy").attr("ascontiguousarray")(array, py::arg("dtype") = "int64");
}

Q::EmbeddingBagMode mode_of(const std::string& name) {
  if (name == "sum") return Q::EmbeddingBagMode::sum;
  if (name == "mean") return Q::EmbeddingBagMode::mean;
  if (name == "max") return Q::EmbeddingBagMode::max;
  fail("embedding_bag: mode = \"" + name + "\" (expected \"sum\", \"mean\" or \"max\")");
}

}  // namespace

void bind_embedding(py::module_& m) {
  using T = Q::QuantizedEmbeddingTable;
  py::class_<T> cls(m, "QuantizedEmbeddingTable", R"doc(
A row-wise quantized embedding table [rows, dim]: per row a float scale and bias (the row
minimum), codes of 8 bits or 4 bits (torch's quint4x2), in torch's prepacked layout
(embedding_bag_byte_prepack / embedding_bag_4bit_prepack). Lookups decode only the rows used.

>>> import lucidq as Q, numpy as np
>>> t = Q.QuantizedEmbeddingTable.quantize(np.array([[0.0, 1.0], [2.0, 4.0]], np.float32), bits=8)
>>> t.lookup([1, 0]).tolist()
[[2.0, 4.0], [0.0, 1.0]]
)doc");
  cls.def_static(
      "quantize",
      [](py::handle w, int bits) {
        py::array a = float32_array(w, "QuantizedEmbeddingTable.quantize: w");
        if (a.ndim() != 2) fail("QuantizedEmbeddingTable.quantize: w must be 2-D [rows, dim]");
        py::gil_scoped_release release;
        return T::quantize(static_cast<const float*>(a.data()), a.shape(0), a.shape(1), bits);
      },
      py::arg("w"), py::arg("bits") = 8);
  cls.def_static(
      "from_prepacked",
      [](py::handle packed, std::int64_t dim, int bits) {
        py::array a = py::module_::import("numpy").attr("ascontiguousarray")(
            packed, py::arg("dtype") = "uint8");
        if (a.ndim() != 2 || a.shape(1) != T::row_bytes(dim, bits))
          fail("QuantizedEmbeddingTable.from_prepacked: packed has shape " +
               py::str(shape_tuple(shape_of(a))).cast<std::string>() + " (expected [rows, " +
               std::to_string(T::row_bytes(dim, bits)) + "] for dim " + std::to_string(dim) +
               " at " + std::to_string(bits) + " bits)");
        return T::from_prepacked(static_cast<const std::uint8_t*>(a.data()), a.shape(0), dim, bits);
      },
      py::arg("packed"), py::arg("dim"), py::arg("bits") = 8,
      "Adopts torch's prepacked rows (uint8 [rows, row_bytes]).");
  cls.def_property_readonly("rows", &T::rows);
  cls.def_property_readonly("dim", &T::dim);
  cls.def_property_readonly("bits", &T::bits);
  cls.def("prepacked", [](const T& t) {
    const auto b = t.bytes();
    return vector_to_numpy(std::vector<std::uint8_t>(b.begin(), b.end()),
                           Q::Shape{t.rows(), T::row_bytes(t.dim(), t.bits())});
  });
  cls.def("scales", [](const T& t) {
    std::vector<float> s(static_cast<std::size_t>(t.rows()));
    for (std::int64_t r = 0; r < t.rows(); ++r)
      s[static_cast<std::size_t>(r)] = t.scale(r);
    return vector_to_numpy(s);
  });
  cls.def("biases", [](const T& t) {
    std::vector<float> s(static_cast<std::size_t>(t.rows()));
    for (std::int64_t r = 0; r < t.rows(); ++r)
      s[static_cast<std::size_t>(r)] = t.bias(r);
    return vector_to_numpy(s);
  });
  cls.def(
      "codes",
      [](const T& t) {
        std::vector<std::uint8_t> c(static_cast<std::size_t>(t.rows() * t.dim()));
        for (std::int64_t r = 0; r < t.rows(); ++r)
          for (std::int64_t d = 0; d < t.dim(); ++d)
            c[static_cast<std::size_t>(r * t.dim() + d)] = static_cast<std::uint8_t>(t.code(r, d));
        return vector_to_numpy(c, Q::Shape{t.rows(), t.dim()});
      },
      "The codes [rows, dim] as uint8 (0..15 at 4 bits).");
  cls.def(
      "lookup",
      [](const T& t, py::handle indices) {
        py::array_t<std::int64_t> idx = index_array(indices, "embedding: indices");
        Q::Shape shape = shape_of(idx);
        shape.push_back(t.dim());
        std::vector<py::ssize_t> dims(shape.begin(), shape.end());
        py::array_t<float> out(dims);
        const std::int64_t count = idx.size();
        py::gil_scoped_release release;
        Q::embedding_lookup(t, idx.data(), count, out.mutable_data());
        return out;
      },
      py::arg("indices"), "Decoded rows [*indices.shape, dim].");
  cls.def(
      "bag",
      [](const T& t, py::handle indices, py::handle offsets, const std::string& mode,
         py::handle per_sample_weights, bool include_last_offset, std::int64_t padding_idx) {
        py::array_t<std::int64_t> idx = index_array(indices, "embedding_bag: indices");
        Q::EmbeddingBagOptions o;
        o.mode = mode_of(mode);
        o.include_last_offset = include_last_offset;
        o.padding_idx = padding_idx;
        py::array_t<std::int64_t> off;
        if (idx.ndim() == 2) {  // [bags, n]: fixed-size bags, as torch
          if (!offsets.is_none()) fail("embedding_bag: offsets must be None for 2-D indices");
          std::vector<std::int64_t> v;
          for (py::ssize_t b = 0; b < idx.shape(0); ++b)
            v.push_back(b * idx.shape(1));
          off = vector_to_numpy(v);
          o.include_last_offset = false;
        } else if (idx.ndim() == 1) {
          if (offsets.is_none()) fail("embedding_bag: offsets are required for 1-D indices");
          off = index_array(offsets, "embedding_bag: offsets");
        } else {
          fail("embedding_bag: indices must be 1-D (with offsets) or 2-D");
        }
        std::vector<float> weights;
        if (!per_sample_weights.is_none()) {
          py::array pw = float32_array(per_sample_weights, "embedding_bag: per_sample_weights");
          if (pw.size() != idx.size())
            fail("embedding_bag: per_sample_weights has " + std::to_string(pw.size()) +
                 " values (expected one per index: " + std::to_string(idx.size()) + ")");
          const float* p = static_cast<const float*>(pw.data());
          weights.assign(p, p + pw.size());
        }
        const std::int64_t bags = Q::embedding_bag_count(off.size(), o);
        py::array_t<float> out(std::vector<py::ssize_t>{bags, t.dim()});
        const std::int64_t count = idx.size(), offset_count = off.size();
        py::gil_scoped_release release;
        Q::embedding_bag(t, idx.data(), count, off.data(), offset_count,
                         weights.empty() ? nullptr : weights.data(), o, out.mutable_data());
        return out;
      },
      py::arg("indices"), py::arg("offsets") = py::none(), py::arg("mode") = "sum",
      py::arg("per_sample_weights") = py::none(), py::arg("include_last_offset") = false,
      py::arg("padding_idx") = -1,
      "Bags [bags, dim] as torch.nn.EmbeddingBag: sum / mean / max of the decoded rows.");
}

}  // namespace lucidq_python

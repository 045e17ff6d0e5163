// Links against an installed lucidq and quantizes the seed notes' first values.
#include <cstdio>
#include <lucid/quantization.hpp>

namespace Q = lucid::quantization;

int main() {
  const Q::Tensor x = Q::Tensor::from_floats({191.6f, -13.5f, 728.6f});
  const auto codes = Q::quantize(x, Q::QParams::per_tensor(3.5f, -70, Q::qint8)).int_repr();
  std::printf("lucidq %s codes %d %d %d\n", Q::version, codes[0], codes[1], codes[2]);
  return codes == std::vector<std::int32_t>{-15, -74, 127} ? 0 : 1;
}

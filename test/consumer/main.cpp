// Uses only the installed public headers; exits 0 when the DirectML example comes out right.
#include <hetkern/hetkern.hpp>

#include <cstdio>
#include <vector>

int main() {
  const std::vector<float> x = {2, 1, 3, 5, 3, 8, 7, 3, 9, 6, 2, 4};
  std::vector<float> y(x.size());
  const hk::TensorDesc desc(hk::DataType::float32, {1, 1, 3, 4});
  hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 3});
  const std::vector<float> expected = {2, 3, 6, 11, 3, 11, 18, 21, 9, 15, 17, 21};
  if (y != expected) {
    std::puts("wrong result");
    return 1;
  }
  std::printf("consumer: hetkern %s works\n", hk::build_info().version.c_str());
  return 0;
}

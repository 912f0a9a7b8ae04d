// Compile-cost TU: the one-include umbrella <lancet/lancet.hpp>, used trivially.
#include <lancet/lancet.hpp>

#include <cstdint>

int main() {
  auto a = lancet::arrow::make_array<std::int64_t>({1, 2, 3});
  return static_cast<int>(a->length) - 3;
}

// Shared test helpers: seeded RNG that prints its seed, and error-message matchers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization::testing {

/// The seed for randomised tests: LUCIDQ_SEED from the environment, else `fallback`.
/// Printed (and recorded as a gtest property) so any failure can be replayed.
inline std::uint64_t test_seed(std::uint64_t fallback = 20261130) {
  std::uint64_t seed = fallback;
  if (const char* env = std::getenv("LUCIDQ_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::cout << "[ seed ] LUCIDQ_SEED=" << seed << "\n";
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

}  // namespace lucid::quantization::testing

/// Expects `statement` to throw lucid::quantization::Error whose message contains `needle`.
#define EXPECT_ERROR_CONTAINS(statement, needle)                                    \
  do {                                                                              \
    try {                                                                           \
      statement;                                                                    \
      ADD_FAILURE() << "expected lucid::quantization::Error from: " #statement;     \
    } catch (const lucid::quantization::Error& error_) {                            \
      EXPECT_NE(std::string(error_.what()).find(needle), std::string::npos)         \
          << "message: " << error_.what() << "\nexpected to contain: " << (needle); \
    }                                                                               \
  } while (0)

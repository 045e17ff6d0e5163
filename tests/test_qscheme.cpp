// Tests for QScheme: seed 000's examples, helpers and names.
#include <gtest/gtest.h>

#include "lucid/quantization/qscheme.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(QScheme, SeedExamples) {
  // >>> Q.per_channel_symmetric is Q.QScheme.PER_CHANNEL_SYMMETRIC  -> True
  static_assert(Q::per_channel_symmetric == Q::QScheme::PER_CHANNEL_SYMMETRIC);
  EXPECT_EQ(Q::per_channel_symmetric, Q::QScheme::PER_CHANNEL_SYMMETRIC);
  // >>> Q.per_channel_symmetric.is_per_channel -> True
  EXPECT_TRUE(Q::is_per_channel(Q::per_channel_symmetric));
  // >>> Q.per_channel_symmetric.is_symmetric -> True
  EXPECT_TRUE(Q::is_symmetric(Q::per_channel_symmetric));
  // >>> Q.per_tensor_affine.is_symmetric -> False
  EXPECT_FALSE(Q::is_symmetric(Q::per_tensor_affine));
}

TEST(QScheme, AliasesMatchMembers) {
  EXPECT_EQ(Q::per_tensor_affine, Q::QScheme::PER_TENSOR_AFFINE);
  EXPECT_EQ(Q::per_tensor_symmetric, Q::QScheme::PER_TENSOR_SYMMETRIC);
  EXPECT_EQ(Q::per_channel_affine, Q::QScheme::PER_CHANNEL_AFFINE);
}

TEST(QScheme, HelpersCoverTheCrossProduct) {
  EXPECT_FALSE(Q::is_per_channel(Q::per_tensor_affine));
  EXPECT_FALSE(Q::is_per_channel(Q::per_tensor_symmetric));
  EXPECT_TRUE(Q::is_per_channel(Q::per_channel_affine));
  EXPECT_TRUE(Q::is_symmetric(Q::per_tensor_symmetric));
  EXPECT_FALSE(Q::is_symmetric(Q::per_channel_affine));
}

TEST(QScheme, NamesRoundTrip) {
  for (auto scheme : {Q::per_tensor_affine, Q::per_tensor_symmetric, Q::per_channel_affine,
                      Q::per_channel_symmetric}) {
    EXPECT_EQ(Q::qscheme_from_string(Q::to_string(scheme)), scheme);
  }
  EXPECT_EQ(Q::to_string(Q::per_channel_symmetric), "per_channel_symmetric");
  EXPECT_EQ(Q::qscheme_from_string("PER_TENSOR_AFFINE"), Q::per_tensor_affine);
}

TEST(QScheme, UnknownNameIsAClearError) {
  EXPECT_ERROR_CONTAINS(Q::qscheme_from_string("per_block"), "\"per_block\"");
  EXPECT_ERROR_CONTAINS(Q::qscheme_from_string("per_block"), "per_channel_symmetric");
}

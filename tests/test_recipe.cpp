// Tests of recipe.hpp: glob matching, settings, rule order and the recipe JSON form.
#include "lucid/quantization/recipe.hpp"

#include <gtest/gtest.h>

#include "checkpoint_test_support.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

TEST(GlobMatch, StarMatchesAnyRunIncludingDots) {
  EXPECT_TRUE(Q::glob_match("*.weight", "model.layers.0.mlp.up_proj.weight"));
  EXPECT_TRUE(Q::glob_match("*", "a.b.c"));
  EXPECT_TRUE(Q::glob_match("*", ""));
  EXPECT_TRUE(Q::glob_match("layers.*.fc.*", "layers.12.fc.bias"));
  EXPECT_FALSE(Q::glob_match("*.weight", "weight"));
  EXPECT_FALSE(Q::glob_match("*.weight", "a.weight.scale"));
}

TEST(GlobMatch, QuestionMarkSetsAndEscapes) {
  EXPECT_TRUE(Q::glob_match("layers.?.fc", "layers.3.fc"));
  EXPECT_FALSE(Q::glob_match("layers.?.fc", "layers.13.fc"));
  EXPECT_TRUE(Q::glob_match("h.[0-3].w", "h.2.w"));
  EXPECT_FALSE(Q::glob_match("h.[0-3].w", "h.7.w"));
  EXPECT_TRUE(Q::glob_match("h.[!0-3].w", "h.7.w"));
  EXPECT_TRUE(Q::glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(Q::glob_match("a\\*b", "axxb"));
  EXPECT_TRUE(Q::glob_match("exact.name", "exact.name"));
  EXPECT_FALSE(Q::glob_match("exact.name", "exact.name2"));
}

TEST(GlobMatch, NameWithNulNeverMatches) {
  EXPECT_FALSE(Q::glob_match("*", std::string_view("a\0b", 3)));
}

TEST(QuantSettings, DescribeNamesDtypeSchemeGroupAndAxis) {
  EXPECT_EQ(Q::describe(Q::QuantSettings{}), "qint8 per_channel_symmetric axis 0");
  EXPECT_EQ(Q::describe({Q::per_channel_affine, Q::quint4, -1, 128}),
            "quint4 per_channel_affine group 128 axis -1");
  EXPECT_EQ(Q::describe({Q::per_tensor_affine, Q::quint8, 0, 0}), "quint8 per_tensor_affine");
}

TEST(QuantSettings, ResolveMakesTheAxisNonNegative) {
  const Q::QuantSettings s{Q::per_channel_symmetric, Q::qint4, -1, 32};
  EXPECT_EQ(Q::resolve_settings(s, {8, 64}).axis, 1);
  EXPECT_EQ(Q::resolve_settings(s, {2, 8, 64}).axis, 2);
  EXPECT_EQ(Q::resolve_settings({Q::per_tensor_affine, Q::quint8, 3, 0}, {4}).axis, 0);
}

TEST(QuantSettings, ResolveRejectsSettingsThatDoNotFit) {
  EXPECT_ERROR_CONTAINS(Q::resolve_settings({Q::per_channel_symmetric, Q::qint8, 2, 0}, {4, 4}),
                        "axis = 2 with per_channel_symmetric on a tensor of rank 2");
  EXPECT_ERROR_CONTAINS(Q::resolve_settings({Q::per_channel_symmetric, Q::qint8, -3, 0}, {4, 4}),
                        "expected an axis in [-2, 1]");
  EXPECT_ERROR_CONTAINS(Q::resolve_settings({Q::per_channel_symmetric, Q::qint8, 0, 0}, {}),
                        "expected a per_tensor scheme for a scalar");
  EXPECT_ERROR_CONTAINS(Q::resolve_settings({Q::per_tensor_affine, Q::qint8, 0, 16}, {4, 4}),
                        "group_size = 16 with per_tensor_affine");
  EXPECT_ERROR_CONTAINS(Q::resolve_settings({Q::per_channel_affine, Q::qint8, 0, -1}, {4, 4}),
                        "group_size = -1 (expected >= 0)");
}

TEST(QuantRecipe, FirstApplicableRuleWins) {
  Q::QuantRecipe recipe;
  recipe.rules.push_back({{"lm_head.*"}, 0, std::nullopt, "skip head"});
  recipe.rules.push_back({{"*.weight"}, 2, Q::QuantSettings{}, "weights"});
  recipe.rules.push_back(
      {{"*"}, 0, Q::QuantSettings{Q::per_tensor_affine, Q::quint8, 0, 0}, "rest"});
  EXPECT_EQ(recipe.match("lm_head.weight", 2)->origin, "skip head");
  EXPECT_EQ(recipe.match("fc.weight", 2)->origin, "weights");
  EXPECT_EQ(recipe.match("norm.weight", 1)->origin, "rest");  // min_ndim 2 skips "weights"
  EXPECT_EQ(recipe.match("fc.bias", 1)->origin, "rest");
  EXPECT_EQ(Q::QuantRecipe{}.match("fc.weight", 2), nullptr);
}

TEST(QuantRecipe, AnyPatternOfARuleMatches) {
  Q::QuantRecipe recipe;
  recipe.rules.push_back({{"*.q_proj.weight", "*.k_proj.weight"}, 0, Q::QuantSettings{}, "qk"});
  EXPECT_NE(recipe.match("l.k_proj.weight", 2), nullptr);
  EXPECT_NE(recipe.match("l.q_proj.weight", 2), nullptr);
  EXPECT_EQ(recipe.match("l.v_proj.weight", 2), nullptr);
}

TEST(QuantRecipe, ComposeOrdersExcludeThenRecipeThenDefault) {
  Q::QuantRecipe file;
  file.rules.push_back({{"*.fc.weight"},
                        0,
                        Q::QuantSettings{Q::per_channel_symmetric, Q::qint4, 1, 8},
                        "recipe.json rules[0]"});
  const Q::QuantSettings cli{Q::per_channel_affine, Q::quint8, 0, 0};
  const Q::QuantRecipe r = Q::compose_recipe({"skip.*"}, file, {}, cli);
  ASSERT_EQ(r.rules.size(), 3u);
  EXPECT_EQ(r.match("skip.fc.weight", 2)->origin, "--exclude skip.*");
  EXPECT_FALSE(r.match("skip.fc.weight", 2)->settings.has_value());
  EXPECT_EQ(r.match("a.fc.weight", 2)->origin, "recipe.json rules[0]");
  EXPECT_EQ(r.match("a.other.weight", 2)->settings, cli);
  EXPECT_EQ(r.match("a.other.bias", 1), nullptr);  // the default rule needs rank >= 2
}

TEST(QuantRecipe, IncludeNarrowsTheDefaultRule) {
  const Q::QuantRecipe r = Q::compose_recipe({}, {}, {"layers.*", "head.w"}, Q::QuantSettings{});
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(r.rules[0].origin, "--include layers.*, head.w");
  EXPECT_NE(r.match("layers.0.w", 2), nullptr);
  EXPECT_NE(r.match("head.w", 2), nullptr);
  EXPECT_EQ(r.match("embed.w", 2), nullptr);
  EXPECT_EQ(r.match("layers.0.b", 1), nullptr);
}

TEST(ParseRecipe, ReadsRulesWithDefaults) {
  const Q::QuantRecipe r = Q::parse_recipe(R"({
    "version": 1,
    "comment": "int4 attention, int8 elsewhere",
    "rules": [
      {"match": "lm_head.weight", "skip": true, "comment": "keep the head"},
      {"match": ["*.q_proj.weight", "*.k_proj.weight"], "dtype": "qint4", "group_size": 128},
      {"match": "*.weight", "min_ndim": 2, "scheme": "per_channel_affine", "dtype": "uint8",
       "axis": 1},
      {"match": "*", "scheme": "per_tensor_symmetric", "skip": false}
    ]})",
                                           "recipe.json");
  ASSERT_EQ(r.rules.size(), 4u);
  EXPECT_EQ(r.rules[0].patterns, std::vector<std::string>{"lm_head.weight"});
  EXPECT_FALSE(r.rules[0].settings.has_value());
  EXPECT_EQ(r.rules[0].origin, "recipe.json rules[0]");
  EXPECT_EQ(r.rules[1].patterns.size(), 2u);
  EXPECT_EQ(r.rules[1].settings, (Q::QuantSettings{Q::per_channel_symmetric, Q::qint4, -1, 128}));
  EXPECT_EQ(r.rules[2].min_ndim, 2);
  EXPECT_EQ(r.rules[2].settings, (Q::QuantSettings{Q::per_channel_affine, Q::quint8, 1, 0}));
  EXPECT_EQ(r.rules[3].settings, (Q::QuantSettings{Q::per_tensor_symmetric, Q::qint8, 0, 0}));
}

TEST(ParseRecipe, CustomRangeDtypes) {
  const Q::QuantRecipe r =
      Q::parse_recipe(R"({"rules": [{"match": "*", "dtype": "qint8[-127,127]"}]})", "r.json");
  EXPECT_EQ(r.rules[0].settings->qdtype, Q::qint8.narrow_range());
}

TEST(ParseRecipe, EmptyRuleListIsValid) {
  EXPECT_TRUE(Q::parse_recipe(R"({"rules": []})", "r.json").rules.empty());
}

// Each bad recipe and a piece of the message it must give.
struct BadRecipe {
  const char* text;
  const char* message;
};

TEST(ParseRecipe, ErrorsNameTheFileRuleAndKey) {
  const BadRecipe cases[] = {
      {"{", "r.json: not valid JSON"},
      {"[1]", "r.json: the recipe is a JSON array (expected an object"},
      {"{}", "r.json: no \"rules\""},
      {R"({"rules": {}})", "r.json: \"rules\": object {} (expected an array of rules)"},
      {R"({"rules": [], "extra": 1})", "r.json: \"extra\": unknown key"},
      {R"({"version": 2, "rules": []})", "r.json: \"version\": number 2 (expected 1"},
      {R"({"rules": [3]})", "r.json: rules[0]: number 3 (expected an object"},
      {R"({"rules": [{"dtype": "qint8"}]})", "r.json: rules[0]: no \"match\""},
      {R"({"rules": [{"match": []}]})", "r.json: rules[0]: \"match\": array []"},
      {R"({"rules": [{"match": [1]}]})", "r.json: rules[0]: \"match\": number 1"},
      {R"({"rules": [{"match": ""}]})", "r.json: rules[0]: \"match\": an empty pattern"},
      {R"({"rules": [{"match": "*"}, {"match": "*", "dtpye": "qint4"}]})",
       "r.json: rules[1]: \"dtpye\": unknown key (expected match, skip, scheme, dtype"},
      {R"({"rules": [{"match": "*", "dtype": "int3"}]})",
       "r.json: rules[0]: \"dtype\": qdtype \"int3\" is unknown"},
      {R"({"rules": [{"match": "*", "dtype": 8}]})", "r.json: rules[0]: \"dtype\": number 8"},
      {R"({"rules": [{"match": "*", "scheme": "per_row"}]})", "r.json: rules[0]: \"scheme\": "},
      {R"({"rules": [{"match": "*", "skip": "yes"}]})",
       "r.json: rules[0]: \"skip\": string \"yes\" (expected true or false)"},
      {R"({"rules": [{"match": "*", "skip": true, "dtype": "qint4"}]})",
       "r.json: rules[0]: \"dtype\": given together with \"skip\": true"},
      {R"({"rules": [{"match": "*", "group_size": -4}]})",
       "r.json: rules[0]: \"group_size\": -4 (expected an integer >= 0"},
      {R"({"rules": [{"match": "*", "group_size": 1.5}]})",
       "r.json: rules[0]: \"group_size\": number 1.5"},
      {R"({"rules": [{"match": "*", "scheme": "per_tensor_affine", "group_size": 32}]})",
       "r.json: rules[0]: \"group_size\": 32 with scheme per_tensor_affine"},
      {R"({"rules": [{"match": "*", "scheme": "per_tensor_affine", "axis": 1}]})",
       "r.json: rules[0]: \"axis\": given with scheme per_tensor_affine"},
      {R"({"rules": [{"match": "*", "axis": 99}]})", "r.json: rules[0]: \"axis\": 99"},
      {R"({"rules": [{"match": "*", "min_ndim": -1}]})", "r.json: rules[0]: \"min_ndim\": -1"},
      {R"({"rules": [{"match": "*", "dtype": "qint8", "dtype": "qint4"}]})",
       "r.json: key \"dtype\" appears twice"},
      {"{\"rules\": [{\"match\": \"\xff\"}]}", "r.json: not valid UTF-8 (bad byte at offset 22"},
  };
  for (const BadRecipe& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_ERROR_CONTAINS(Q::parse_recipe(c.text, "r.json"), c.message);
  }
}

TEST(LoadRecipe, ReadsAFileAndNamesItInErrors) {
  Q::testing::TempDir dir;
  Q::testing::write_bytes(dir / "good.json", R"({"rules": [{"match": "*", "skip": true}]})");
  EXPECT_EQ(Q::load_recipe(dir / "good.json").rules[0].origin,
            (dir / "good.json").string() + " rules[0]");
  Q::testing::write_bytes(dir / "bad.json", R"({"rules": [{"match": 1}]})");
  EXPECT_ERROR_CONTAINS(Q::load_recipe(dir / "bad.json"),
                        (dir / "bad.json").string() + ": rules[0]: \"match\"");
  EXPECT_ERROR_CONTAINS(Q::load_recipe(dir / "missing.json"),
                        (dir / "missing.json").string() + ": not a readable file");
  EXPECT_ERROR_CONTAINS(Q::load_recipe(dir.path()), dir.path().string() + ": not a readable file");
}

}  // namespace

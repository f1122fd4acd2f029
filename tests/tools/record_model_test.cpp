// record_model_test.cpp: the record model kairos-lat and kairos-gate share
// (tools/records/record_model.hpp): the workload table, the group key, first-seen groups, medians.
#include <record_model.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace records = kairos::records;

TEST(RecordModel, WorkloadTableNamesEveryStandardWorkload) {
  EXPECT_EQ(records::workload_name("W3"), "lateness");
  EXPECT_EQ(records::workload_name("W9"), "loop-wakeup");
  EXPECT_EQ(records::workload_name("W10"), "");
  EXPECT_EQ(records::find_workload("w3"), nullptr);  // ids are exact
  ASSERT_NE(records::find_workload("W1"), nullptr);
  EXPECT_EQ(records::find_workload("W1")->varies, "producers");
  EXPECT_EQ(records::find_workload("W5")->varies, "timers");
  EXPECT_EQ(records::workload_ids(), (std::vector<std::string>{"W1", "W2", "W2b", "W3", "W4", "W5", "W6", "W7", "W8", "W9"}));
  EXPECT_EQ(records::workload_name("W2b"), "timeout-churn-two-class");
  // kairos-lat's default -w: W2b, W8 and W9 run only when asked.
  EXPECT_EQ(records::default_workloads(), "W1,W2,W3,W4,W5,W6,W7");
}

TEST(RecordModel, GroupKeyKeepsItsPartsApart) {
  EXPECT_EQ(records::group_key("W1", "asio", "{}", "{}"), records::group_key("W1", "asio", "{}", "{}"));
  EXPECT_NE(records::group_key("W1", "asio", "{}", "{}"), records::group_key("W1a", "sio", "{}", "{}"));
  EXPECT_NE(records::group_key("", "W1", "{}", "{}"), records::group_key("W1", "", "{}", "{}"));
  EXPECT_NE(records::group_key("W1", "asio", "{\"p\":1}", "{}"), records::group_key("W1", "asio", "{}", "{\"p\":1}"));
}

TEST(RecordModel, GroupsInFirstSeenOrder) {
  records::GroupIndex index;
  EXPECT_EQ(index.find_or_add("b"), std::make_pair(std::size_t{0}, true));
  EXPECT_EQ(index.find_or_add("a"), std::make_pair(std::size_t{1}, true));
  EXPECT_EQ(index.find_or_add("b"), std::make_pair(std::size_t{0}, false));
  EXPECT_EQ(index.size(), 2u);
}

TEST(RecordModel, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(records::median({3, 1, 2}), 2);
  EXPECT_EQ(records::median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(records::median({}), std::invalid_argument);
}

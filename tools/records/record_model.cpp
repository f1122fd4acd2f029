// record_model.cpp: the shared record model of record_model.hpp.
#include "record_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace kairos::records {

const Workload* find_workload(std::string_view id) {
  for (const Workload& w : kWorkloads)
    if (w.id == id) return &w;
  return nullptr;
}

std::string_view workload_name(std::string_view id) {
  const Workload* w = find_workload(id);
  return w ? w->name : std::string_view{};
}

std::vector<std::string> workload_ids() {
  std::vector<std::string> ids;
  for (const Workload& w : kWorkloads) ids.emplace_back(w.id);
  return ids;
}

std::string default_workloads() {
  std::string ids;
  for (const Workload& w : kWorkloads)
    if (w.by_default) ids += (ids.empty() ? "" : ",") + std::string(w.id);
  return ids;
}

std::string group_key(std::string_view workload, std::string_view system, std::string_view parameters,
                      std::string_view config) {
  constexpr char kSeparator = '\x1f';  // the unit separator: in no workload, system or JSON text
  std::string key(workload);
  for (std::string_view part : {system, parameters, config}) (key += kSeparator) += part;
  return key;
}

std::pair<std::size_t, bool> GroupIndex::find_or_add(const std::string& key) {
  auto [it, added] = at_.emplace(key, at_.size());
  return {it->second, added};
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kairos::records

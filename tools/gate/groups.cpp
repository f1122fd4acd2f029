// groups.cpp: the groups of kairos-gate's runs (judge.hpp): runs of the same workload, system,
// parameters and config (less ignored keys) are the repeats of one measurement; the key and the
// first-seen order are the record model kairos-lat shares (tools/records/record_model.hpp).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <record_model.hpp>

#include "judge.hpp"

namespace kairos::gate {

using nlohmann::json;

nlohmann::json reduced_config(const Run& r, const std::set<std::string>& ignore) {
  json c = r.config;
  if (c.is_object())
    for (const std::string& k : ignore) c.erase(k);
  return c;
}

std::string key_of(const std::string& w, const std::string& s, const json& p, const json& c) {
  return records::group_key(w, s, p.dump(), c.dump());
}

std::vector<Group> group_runs(const std::vector<const Run*>& runs, const std::set<std::string>& ignore) {
  std::vector<Group> groups;
  records::GroupIndex index;
  for (const Run* r : runs) {
    json c = reduced_config(*r, ignore);
    const auto [at, added] = index.find_or_add(key_of(r->workload, r->system, r->parameters, c));
    if (added) groups.push_back(Group{r->workload, r->system, r->parameters, std::move(c), {}, {}});
    groups[at].runs.push_back(r);
  }
  for (Group& g : groups) {
    g.name = g.system.empty() ? g.workload : g.workload + ' ' + g.system;
    for (const Group& h : groups) {
      if (&h == &g || h.workload != g.workload || h.system != g.system) continue;
      if (h.parameters != g.parameters) g.name += ' ' + g.parameters.dump();
      if (h.config != g.config) g.name += ' ' + g.config.dump();
      break;
    }
  }
  return groups;
}

bool selected(const Run& r, const GateOptions& o) { return o.workloads.empty() || o.workloads.count(r.workload); }

std::vector<double> values_of(const std::vector<const Run*>& runs, const std::string& figure, const std::string& name) {
  std::vector<double> v;
  const Run* missing = nullptr;
  for (const Run* r : runs) {
    auto it = r->figures.find(figure);
    if (it == r->figures.end())
      missing = r;
    else
      v.push_back(it->second);
  }
  if (missing && !v.empty())
    throw BadInput(missing->where + ": no \"" + figure + "\", which other runs of " + name + " have");
  return v;
}

}  // namespace kairos::gate

#!/usr/bin/env python3
# call_sites.py <dir>: writes sites.cpp (100 schedule() call sites, each with its own lambda) and
# none.cpp (the same includes, no call site). Their compile times' difference is what 100 distinct
# callables cost to compile (PERF.md, "Engine v4, thirteenth round").
import sys
d = sys.argv[1] if len(sys.argv) > 1 else '.'
head = ('#include <kairos/kairos.hpp>\n#include <atomic>\n#include <vector>\n'
        'using namespace std::chrono_literals;\nstd::atomic<int> g;\n')
with open(f'{d}/sites.cpp', 'w') as f:
    f.write(head + 'void sites(kairos::Scheduler& s, std::vector<kairos::ScheduledFuture<void>>& v) {\n')
    for i in range(100):
        f.write(f'  v.push_back(s.schedule([&] {{ g += {i}; }}, 1ms));\n')
    f.write('}\n')
with open(f'{d}/none.cpp', 'w') as f:
    f.write(head + 'void sites(kairos::Scheduler& s, std::vector<kairos::ScheduledFuture<void>>& v) { (void)s; (void)v; }\n')

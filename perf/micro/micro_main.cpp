// micro_main.cpp: Google Benchmark's main, plus what a reader of the JSON needs to know about the
// machine: the kernel's clock source (it decides what a clock read costs) and the CPU count.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>
#include <thread>

namespace {

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("clocksource",
                              read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource"));
  benchmark::AddCustomContext("hardware_concurrency", std::to_string(std::thread::hardware_concurrency()));
  benchmark::AddCustomContext("pinning", "none");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

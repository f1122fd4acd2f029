// latency.cpp: a consumer of the latency kit (kairos::latency, kairos-latency.pc): paces a few
// calls with the Pacer and sends its histogram through the HdrHistogram codec and back. It links
// the kit and nothing of zlib by itself.
#include <kairos/hdr_codec.hpp>
#include <kairos/kairos.hpp>
#include <kairos/pacer.hpp>

#include <chrono>
#include <cstdio>

int main() {
  kairos::Options options;
  options.wait = kairos::WaitPolicy::sleep();
  kairos::Scheduler scheduler{options};
  kairos::Pacer pacer{scheduler};
  const kairos::PacerReport r = pacer.run_count([] {}, std::chrono::microseconds(100), 50);
  const kairos::LatencyHistogram back = kairos::hdr::from_base64(kairos::hdr::to_base64(r.histogram));
  std::printf("latency consumer: %llu calls, %llu decoded\n", static_cast<unsigned long long>(r.calls),
              static_cast<unsigned long long>(back.count()));
  return r.calls == 50 && back.count() == 50 ? 0 : 1;
}

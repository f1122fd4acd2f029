// model_fuzz.cpp: libFuzzer target. The input bytes are a Sequence (model.hpp, enc::decode);
// kairos and the reference model must agree on it. A difference prints the shrunk sequence as a
// GoogleTest test and aborts. Built only with Clang; run it with tests/model/run_fuzz.sh.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "driver.hpp"
#include "model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kairos_model;
  Sequence s = enc::decode(data, size, 48);
  std::string r = check(s);
  if (r.empty()) return 0;
  std::fprintf(stderr, "\nkairos differs from the model: %s\n", r.c_str());
  Sequence small = shrink(s, nullptr, 300);
  std::string why = check(small);
  std::fprintf(stderr, "Shrunk:\n%s\n", to_gtest(small, "Fuzz", why.empty() ? r : why).c_str());
  std::abort();
}

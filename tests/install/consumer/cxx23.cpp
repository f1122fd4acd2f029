// cxx23.cpp: a program built with a standard newer than kairos's minimum keeps it:
// `c++ -std=c++23 cxx23.cpp $(pkg-config --cflags --libs kairos)` compiles as C++23 (kairos.pc
// names no -std that would come after the user's and win).
#include <kairos/kairos.hpp>

static_assert(__cplusplus > 202002L, "compiled as C++20 or older: a -std flag overrode the user's -std=c++23");

int main() {
  kairos::Scheduler scheduler{{.shards = 1}};
  auto answer = scheduler.schedule([] { return 23; }, std::chrono::milliseconds(1));
  return answer.get() == 23 ? 0 : 1;
}

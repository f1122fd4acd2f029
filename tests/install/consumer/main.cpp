#include <kairos/kairos.hpp>

#include <cstdio>

int main() {
  kairos::Scheduler s;
  auto f = s.schedule([] { return 41 + 1; }, std::chrono::milliseconds(1));
  int v = f.get();
  std::printf("consumer got %d\n", v);
  return v == 42 ? 0 : 1;
}

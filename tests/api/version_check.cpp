// version_check.cpp: <kairos/version.hpp> says the version project() in CMakeLists.txt gives
// (the KAIROS_EXPECTED_* definitions come from it). Compile-only, part of kairos_api_check.
#include <kairos/kairos.hpp>  // version.hpp comes with the one include users write

#include <string_view>

static_assert(KAIROS_VERSION_MAJOR == KAIROS_EXPECTED_MAJOR, "version.hpp: major differs from project()");
static_assert(KAIROS_VERSION_MINOR == KAIROS_EXPECTED_MINOR, "version.hpp: minor differs from project()");
static_assert(KAIROS_VERSION_PATCH == KAIROS_EXPECTED_PATCH, "version.hpp: patch differs from project()");
static_assert(std::string_view(KAIROS_VERSION_STRING) == KAIROS_EXPECTED_STRING,
              "version.hpp: KAIROS_VERSION_STRING differs from project()");
static_assert(KAIROS_VERSION ==
              KAIROS_EXPECTED_MAJOR * 10000 + KAIROS_EXPECTED_MINOR * 100 + KAIROS_EXPECTED_PATCH);

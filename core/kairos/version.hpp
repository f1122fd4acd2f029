// version.hpp: the version of the kairos headers in use, as numbers and as a string.
// Threads: constants only. Cost: none at run time.
// Kept equal to project(kairos VERSION ...) in CMakeLists.txt; the api_check test fails otherwise.
#pragma once

#define KAIROS_VERSION_MAJOR 0
#define KAIROS_VERSION_MINOR 1
#define KAIROS_VERSION_PATCH 0
#define KAIROS_VERSION_STRING "0.1.0"
// One number that orders versions: major * 10000 + minor * 100 + patch.
#define KAIROS_VERSION (KAIROS_VERSION_MAJOR * 10000 + KAIROS_VERSION_MINOR * 100 + KAIROS_VERSION_PATCH)

// export.hpp: KAIROS_API marks a declaration that a shared libkairos exports.
// A shared libkairos exports the kairos namespace only (cmake/kairos.map hides the template
// instances of the standard library and of the engine's inbox queue). KAIROS_API gives a declaration
// default visibility, so it stays exported also where the engine is compiled with
// -fvisibility=hidden. On a static library it changes nothing.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define KAIROS_API __attribute__((visibility("default")))
#else
#define KAIROS_API
#endif

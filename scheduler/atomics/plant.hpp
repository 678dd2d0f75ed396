// Planted bugs: the one switch through which a Relacy model test breaks the code under test on purpose.
//
// A model test shows that it catches a bug only by catching one: each model executable also runs with a planted
// bug chosen on its command line (`--plant=<structure>.<bug>`, the list and its rules in tests/model/plant.hpp)
// and must then fail. The broken line sits beside the correct one in the structure's own text:
//
//   if (WEFT_PLANTED("deque.no_take_fence")) { the bug } else { the correct code }
//
// Only the Relacy model build defines WEFT_MODEL_PLANTS (tests/meson.build). Everywhere else WEFT_PLANTED(name)
// is the constant `false`, so a production build compiles exactly the correct text: no check at run time, no
// state, no symbol. Installed headers (include/weft/) never use it; a structure there takes its plants through a
// template parameter whose production argument plants nothing (include/weft/detail/child_count.hpp).
#pragma once

#if defined(WEFT_MODEL_PLANTS)
#if !defined(RL_RELACY_HPP)
#error "WEFT_MODEL_PLANTS is for the Relacy model tests only (include <relacy/relacy.hpp> first)"
#endif
namespace weft::atomics {
// Whether `name` is the plant this run chose; marks it reached. Defined by tests/model/plant.hpp.
inline bool planted(const char* name) noexcept;
}  // namespace weft::atomics
#define WEFT_PLANTED(name) (::weft::atomics::planted(name))
#else
#define WEFT_PLANTED(name) false
#endif

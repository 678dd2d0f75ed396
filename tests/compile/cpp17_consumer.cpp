// A program compiled as C++17 that includes one public header of weft (WEFT_HEADER, which check_compile.py sets
// to each in turn) after a standard header of its own: it must be refused with weft/detail/require_cpp20.hpp's
// one #error, saying weft needs C++20, in a few lines, never with errors from weft's templates.
#include <vector>

#include WEFT_HEADER

int main() { return static_cast<int>(std::vector<int>{}.size()); }

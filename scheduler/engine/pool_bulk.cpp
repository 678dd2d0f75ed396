// weft::Pool::post_bulk's errors, out of line: the batch loop in the header stays small.
#include <stdexcept>
#include <string>

#include "weft/pool.hpp"

namespace weft {

void Pool::throw_bulk_empty(std::size_t index, std::size_t count) {
  throw std::invalid_argument("weft::Pool::post_bulk: task " + std::to_string(index) + " of " + std::to_string(count) +
                              " is empty (a null function pointer or an empty std::function); no task of the "
                              "batch was posted");
}

void Pool::throw_bulk_closed(std::size_t accepted, std::size_t count) {
  throw pool_closed("weft::Pool::post_bulk: the pool is shut down (or shutting down): " + std::to_string(accepted) +
                    " of " + std::to_string(count) + " tasks were accepted before it closed, the other " +
                    std::to_string(count - accepted) + " were not");
}

}  // namespace weft

// The compiled half of weft's coroutines (weft/task.hpp): which pool a coroutine is running on, and where a
// spawned Task's exception goes. Everything else of Task, sync_wait, spawn and when_all is inline in the headers.
#include <exception>
#include <utility>

#include "scheduler/engine/pool_access.hpp"
#include "weft/pool.hpp"
#include "weft/task.hpp"

namespace weft::detail {

Pool* coro_current_pool() noexcept { return PoolAccess::current(); }

void coro_report_error(Pool& pool, std::exception_ptr error) noexcept {
  PoolAccess::report_error(pool, std::move(error));
}

}  // namespace weft::detail

// The exceptions weft throws. Each message names what was wrong: the option, the value, the task.
#pragma once

#include <stdexcept>
#include <string>

namespace weft {

// A submission was refused because the pool is shutting down or shut down. The task did not run and will not.
class pool_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A task was accepted but then dropped without running (Shutdown::DropPending, or shutdown_for's deadline);
// thrown by Future::get() of that task.
class task_dropped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An option had a value weft cannot honour, e.g. PoolOptions::threads = 100000 or an affinity to worker 9 in a
// pool of 4. The message names the option and the value.
class invalid_option : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A call would wait for itself, e.g. Pool::wait_idle() or Pool::shutdown() from one of the pool's own tasks.
class would_deadlock : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace weft

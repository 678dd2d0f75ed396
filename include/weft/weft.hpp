// All of weft in one include: every public header (each header under include/weft/ but detail/). For programs
// that would rather not pick headers; including only the ones used compiles faster. tests/compile checks that
// this list names every public header. weft/version.hpp is written by meson when weft is configured (from
// include/weft/version.hpp.in), into the build tree or the installed include/weft/.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include "weft/algorithms.hpp"
#include "weft/async_task.hpp"
#include "weft/condition_variable.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/future.hpp"
#include "weft/generator.hpp"
#include "weft/job.hpp"
#include "weft/loop_body.hpp"
#include "weft/node_options.hpp"
#include "weft/parallel_for.hpp"
#include "weft/per_worker.hpp"
#include "weft/pool.hpp"
#include "weft/pool_options.hpp"
#include "weft/range2d.hpp"
#include "weft/semaphore.hpp"
#include "weft/shared_function.hpp"
#include "weft/small_function.hpp"
#include "weft/stream.hpp"
#include "weft/subflow.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_group.hpp"
#include "weft/task_scope.hpp"
#include "weft/timer.hpp"
#include "weft/topology.hpp"
#include "weft/trace.hpp"
#include "weft/version.hpp"
#include "weft/wait_group.hpp"
#include "weft/when.hpp"

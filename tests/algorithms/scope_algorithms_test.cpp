#include <doctest/doctest.h>
#include "tests/algorithms/algorithms_test_support.hpp"

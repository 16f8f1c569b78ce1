// main() of loom-unit-tests with Catch2 v2 (with v3 it comes from the catch2-with-main library).
#define CATCH_CONFIG_MAIN
#include "loom_catch.hpp"

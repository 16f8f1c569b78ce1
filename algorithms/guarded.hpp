// The C boundary's one rule: no C++ exception crosses into Open MPI. guarded(body) runs body
// and turns what it throws into loom's error codes (loom_c_api.h).
#pragma once

#include "loom_c_api.h"
#include "transport.hpp"

#include <new>

namespace loom {

template <class F>
int guarded(F&& body)
{
    try {
        body();
        return LOOM_SUCCESS;
    } catch (const TransportError& e) {
        return e.code();
    } catch (const std::bad_alloc&) {
        return LOOM_ERR_NO_MEMORY;
    } catch (...) {
        return LOOM_ERR_INTERNAL;
    }
}

} // namespace loom

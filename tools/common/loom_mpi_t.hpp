// loom through the standard MPI_T interface, from inside an MPI program:
//   * LoomCounters reads the performance counters coll_loom_<collective>_served / _declined,
//     which tell whether loom, or the component it fell back to, served the calls;
//   * set_loom_control() writes a control variable such as coll_loom_allreduce_algorithm,
//     to switch algorithms inside one job (every rank must write the same value, between
//     collectives); loom_control() reads a string one, e.g. the value the job was started with.
// Both exist only if loom is loaded. Whether loom is enabled at all: loom_state_on() (loom_state.h).
#pragma once

#include <mpi.h>

#include "loom_state.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::tools {

// One of loom's counters (e.g. "coll_loom_shm_segments_set_up"), counted from open(): Open MPI
// reads a counter relative to its value when the handle was made. open() is false if loom is
// not loaded in this process.
class LoomCounter {
public:
    bool open(const std::string& name)
    {
        int provided, index, count;
        return MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS &&
               MPI_T_pvar_session_create(&session_) == MPI_SUCCESS &&
               MPI_T_pvar_get_index(name.c_str(), MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS &&
               MPI_T_pvar_handle_alloc(session_, index, nullptr, &handle_, &count) == MPI_SUCCESS;
    }
    unsigned long long value()
    {
        unsigned long long v = 0;
        MPI_T_pvar_read(session_, handle_, &v);
        return v;
    }

private:
    MPI_T_pvar_session session_ = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle handle_ = MPI_T_PVAR_HANDLE_NULL;
};

// One of loom's levels (MPI_T_PVAR_CLASS_LEVEL, read as it is, e.g.
// "coll_loom_communicators_enabled"): nothing if loom is not loaded in this process.
inline std::optional<unsigned long long> loom_level(const std::string& name)
{
    int provided, index, count;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;
    std::optional<unsigned long long> value;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return value;
    if (MPI_T_pvar_session_create(&session) == MPI_SUCCESS) {
        unsigned long long v = 0;
        if (MPI_T_pvar_get_index(name.c_str(), MPI_T_PVAR_CLASS_LEVEL, &index) == MPI_SUCCESS &&
            MPI_T_pvar_handle_alloc(session, index, nullptr, &handle, &count) == MPI_SUCCESS) {
            if (MPI_T_pvar_read(session, handle, &v) == MPI_SUCCESS) value = v;
            MPI_T_pvar_handle_free(session, &handle);
        }
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    return value;
}

// The served and declined counters of one collective (e.g. "iallreduce").
class LoomCounters {
public:
    bool open(const std::string& collective)
    {
        return served_.open("coll_loom_" + collective + "_served") &&
               declined_.open("coll_loom_" + collective + "_declined");
    }
    unsigned long long served() { return served_.value(); }
    unsigned long long declined() { return declined_.value(); }

private:
    LoomCounter served_, declined_;
};

// Opens loom's control variable `name` for the duration of `use(handle, count)` (count: the
// variable's element count, for strings the longest value it holds). False if MPI_T or the
// variable is unavailable (loom not loaded) or `use` returns false.
template <class Use>
bool with_loom_control(const std::string& name, Use&& use)
{
    int provided, index, count;
    MPI_T_cvar_handle handle;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return false;
    bool ok = MPI_T_cvar_get_index(name.c_str(), &index) == MPI_SUCCESS &&
              MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS;
    if (ok) {
        ok = use(handle, count);
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return ok;
}

// Writes loom's control variable `name` (e.g. "coll_loom_allreduce_algorithm"); `value`
// points to a char string or to a size_t, as the variable's type requires.
inline bool set_loom_control(const std::string& name, const void* value)
{
    return with_loom_control(name, [&](MPI_T_cvar_handle h, int) { return MPI_T_cvar_write(h, value) == MPI_SUCCESS; });
}

// Reads loom's int control variable `name` (e.g. "coll_loom_shm_max_mib") into *value.
inline bool read_loom_control(const std::string& name, int* value)
{
    return with_loom_control(name, [&](MPI_T_cvar_handle h, int) { return MPI_T_cvar_read(h, value) == MPI_SUCCESS; });
}

// Reads loom's string control variable `name` (e.g. "coll_loom_allreduce_algorithm": "" when
// nothing is forced); nothing if it does not exist (loom is not loaded).
inline std::optional<std::string> loom_control(const std::string& name)
{
    std::optional<std::string> result;
    with_loom_control(name, [&](MPI_T_cvar_handle h, int count) {
        // count: the longest string the variable can hold (Open MPI says 2048), terminator aside.
        std::vector<char> text(std::size_t(count > 0 ? count : 0) + 1, '\0');
        if (MPI_T_cvar_read(h, text.data()) != MPI_SUCCESS) return false;
        result = std::string(text.data());
        return true;
    });
    return result;
}

// The control variable that forces an algorithm for `collective` (loom::to_string's name):
// coll_loom_<collective>_algorithm.
inline std::string algorithm_control(std::string_view collective)
{
    return "coll_loom_" + std::string(collective) + "_algorithm";
}

// Forces `algorithm` for the next calls of `collective` ("": loom's own choice again;
// "fallback": hand every call on), the way users force one. Every rank must force alike,
// between collectives. False if loom is not loaded.
inline bool force_algorithm(std::string_view collective, const std::string& algorithm)
{
    return set_loom_control(algorithm_control(collective), algorithm.c_str());
}

} // namespace loom::tools

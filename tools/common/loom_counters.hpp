// Reads loom's MPI_T performance counters (coll_loom_<collective>_served / _declined) from
// inside an MPI program, through the standard MPI_T interface. They tell whether loom, or
// the component it fell back to, served the calls; they exist only if loom is loaded.
#pragma once

#include <mpi.h>

#include <string>

namespace loom::tools {

class LoomCounters {
public:
    // Binds the counters of one collective; false if loom is not loaded in this process.
    bool open(const std::string& collective)
    {
        int provided;
        if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return false;
        if (MPI_T_pvar_session_create(&session_) != MPI_SUCCESS) return false;
        return bind("coll_loom_" + collective + "_served", served_) &&
               bind("coll_loom_" + collective + "_declined", declined_);
    }
    unsigned long long served() { return read(served_); }
    unsigned long long declined() { return read(declined_); }

private:
    bool bind(const std::string& name, MPI_T_pvar_handle& handle)
    {
        int index, count;
        if (MPI_T_pvar_get_index(name.c_str(), MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS) return false;
        return MPI_T_pvar_handle_alloc(session_, index, nullptr, &handle, &count) == MPI_SUCCESS;
    }
    unsigned long long read(MPI_T_pvar_handle handle)
    {
        unsigned long long value = 0;
        MPI_T_pvar_read(session_, handle, &value);
        return value;
    }
    MPI_T_pvar_session session_ = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle served_ = MPI_T_PVAR_HANDLE_NULL, declined_ = MPI_T_PVAR_HANDLE_NULL;
};

} // namespace loom::tools

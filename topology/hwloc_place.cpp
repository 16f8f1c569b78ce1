// This process's place within its node, from hwloc (topology.hpp: local_place).
//
// The process's CPU binding decides: the package, NUMA node and core whose cpusets cover the
// whole binding. A process bound to one core gets all three; an unbound process on a
// one-package machine gets package and NUMA node but core -1. Open MPI has usually loaded
// the machine's topology already (the glue passes it in); otherwise one is loaded here,
// once per process, which costs a few milliseconds.
#include "topology.hpp"

#include <hwloc.h>

namespace loom::topo {
namespace {

hwloc_topology_t own_topology()
{
    static hwloc_topology_t topology = [] {
        hwloc_topology_t t = nullptr;
        if (hwloc_topology_init(&t) != 0) return hwloc_topology_t(nullptr);
        if (hwloc_topology_load(t) != 0) {
            hwloc_topology_destroy(t);
            return hwloc_topology_t(nullptr);
        }
        return t;
    }();
    return topology;
}

int covering_index(hwloc_topology_t t, hwloc_const_cpuset_t set, hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_get_next_obj_covering_cpuset_by_type(t, set, type, nullptr);
    return obj != nullptr ? int(obj->logical_index) : -1;
}

} // namespace

Place local_place(void* hwloc_topology)
{
    Place place;
    auto t = static_cast<hwloc_topology_t>(hwloc_topology);
    if (t == nullptr) t = own_topology();
    if (t == nullptr) return place;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == nullptr) return place;
    if (hwloc_get_cpubind(t, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        place.package = covering_index(t, set, HWLOC_OBJ_PACKAGE);
        place.numa = covering_index(t, set, HWLOC_OBJ_NUMANODE);
        place.core = covering_index(t, set, HWLOC_OBJ_CORE);
    }
    hwloc_bitmap_free(set);
    return place;
}

} // namespace loom::topo

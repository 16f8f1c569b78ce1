// The C entry points for topology (loom_c_api.h): the glue gathers every rank's place and
// host name once per communicator and keeps the resulting Layout for the algorithms.
#include "loom_c_api.h"

#include "topology.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using loom::topo::Layout;
using loom::topo::Place;

extern "C" void loom_topology_local_place(void* hwloc_topology, int place[3])
{
    Place p;
    try {
        p = loom::topo::local_place(hwloc_topology);
    } catch (...) {}
    place[0] = p.package;
    place[1] = p.numa;
    place[2] = p.core;
}

extern "C" void* loom_topology_create(int comm_size, const char* const* hostnames, const int* places)
{
    try {
        std::vector<std::string> hosts(hostnames, hostnames + comm_size);
        const std::vector<int> nodes = loom::topo::node_ids(hosts);
        std::vector<Place> records(static_cast<std::size_t>(comm_size));
        for (int r = 0; r < comm_size; ++r)
            records[std::size_t(r)] = Place{nodes[std::size_t(r)], places[3 * r], places[3 * r + 1], places[3 * r + 2]};
        return new Layout(std::move(records), std::move(hosts));
    } catch (...) {
        return nullptr;
    }
}

extern "C" void loom_topology_release(void* topology) { delete static_cast<Layout*>(topology); }

extern "C" char* loom_topology_describe(const void* topology)
{
    try {
        std::string text;
        for (const std::string& line : static_cast<const Layout*>(topology)->describe()) text += line + "\n";
        char* out = static_cast<char*>(std::malloc(text.size() + 1));
        if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
        return out;
    } catch (...) {
        return nullptr;
    }
}

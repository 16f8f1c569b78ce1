// What the parts of drop_in_check share (drop_in_check.cpp defines it): the job's rank and
// size, failure reporting, the watchdog's note of what runs, forcing algorithms through MPI_T,
// and the parts themselves (drop_in_arrays.cpp, drop_in_orders.cpp).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <mpi-ext.h>

#include "registry.hpp"

#include <functional>
#include <string>
#include <vector>

namespace drop_in {

extern int rank, size;
extern bool loom_loaded;       // false: the job runs without loom (--mca coll ^loom), nothing forced
extern bool types_freed_early; // see drop_in_arrays.cpp (--types-freed-late)
extern char where[160];        // what runs now, for the watchdog's message

void fail(const std::string& what);
// Rank r's element i of a call salted by salt.
int value(int r, int i, int salt);
// Forces `algorithm` for collective c ("": loom's own choice; nothing without loom).
void force(loom::Collective c, const std::string& algorithm);
// "" (loom's own choice) and every registry algorithm of c (only "" without loom).
std::vector<std::string> forced_names(loom::Collective c);
std::string collective_name(loom::Collective c);
// Completes a call made with req: waits for it once; a persistent request is started three times,
// the send side refilled first (fill(s)). check(s, start) checks each result; s = salt + start.
void complete_and_check(MPI_Request& req, bool persistent, int salt, const std::function<void(int)>& fill,
                        const std::function<void(int, int)>& check);

void part_arrays(); // drop_in_arrays.cpp
// The neighbourhood collectives' part of it (drop_in_neighbours.cpp): c is neighbor_allgatherv,
// _alltoallv or _alltoallw.
void neighbour_arrays(loom::Collective c, bool persistent, int n0, int salt);
void part_orders(); // drop_in_orders.cpp

} // namespace drop_in

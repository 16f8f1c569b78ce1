// The harness shared by collectives_check's parts: loom's counters for every collective,
// expectations about who serves a call, failure reporting, and the reference arithmetic and
// user-defined ops the checks use. References are computed here, never by Open MPI.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "check_forms.hpp"
#include "registry.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace check {

// What must happen to one call: loom serves it, loom declines it (the fallback serves it),
// or nobody sees it (Open MPI's MPI layer returns early, e.g. for a count of 0).
// kept: served even by a forced algorithm that cannot serve it, because loom never hands
// such a call to Open MPI (a SUM of 8- or 16-bit integers, which Open MPI's kernel saturates:
// loom's rules serve it instead; entry.cpp, loom_choose).
enum class Expect { served, declined, untouched, kept };

// The communicator and forced algorithm a group of checks runs with.
struct Setting {
    MPI_Comm comm;
    int rank;
    int size;
    std::string algorithm;   // "" = loom's own choice
    int nodes = 1;           // nodes the communicator spans: shm declines every call on several
    bool equal_nodes = true; // every node the same number of ranks, else hierarchical_rs declines
    bool segments = true;    // loom may set up shared segments (coll_loom_shm_max_mib > 0), else shm declines
    bool single_copy = true; // every rank allows single copy (coll_loom_single_copy), else cma declines
    bool stencil = false;    // a neighbourhood collective's communicator is a stencil, else combining declines
};

// Counts cases and failures; checks loom's served/declined counters around each call. With
// loom's own choice (algorithm "") a call expected to be served may instead be handed on by
// a `fallback` rule of the built-in table; such calls are counted in handed_on.
void expect_call(const Setting& s, const char* collective, Expect expect, const std::string& name,
                 const std::function<void()>& call);
void fail(const Setting& s, const std::string& what);

// Does `algorithm` of `collective` need a commutative op? (Then a non-commutative op must be
// declined.) From loom's registry; with "" (loom's choice) loom finds an order-preserving
// algorithm where the collective has one.
bool needs_commutative(const std::string& collective, const std::string& algorithm);
// The registry's entry for a forced name ("pat@256" is pat); nullptr if none.
const loom::Algorithm* algorithm_named(const std::string& collective, const std::string& forced);

// The checks, one function per collective (check_reductions.cpp, check_data_movement.cpp).
void check_allreduce(const Setting& s);
void check_reduce(const Setting& s);
void check_reduce_scatter_block(const Setting& s);
void check_reduce_scatter(const Setting& s);
void check_allgather(const Setting& s);
void check_allgatherv(const Setting& s);
void check_bcast(const Setting& s);
void check_barrier(const Setting& s);
void check_alltoall(const Setting& s);
void check_scan(const Setting& s);
void check_exscan(const Setting& s);
void check_gather(const Setting& s);
void check_scatter(const Setting& s);
void check_gatherv(const Setting& s);
void check_scatterv(const Setting& s);
void check_alltoallv(const Setting& s);
void check_alltoallw(const Setting& s);
// check_neighbours.cpp: on topology communicators made over s.comm.
void check_neighbor_allgather(const Setting& s);
void check_neighbor_allgatherv(const Setting& s);
void check_neighbor_alltoall(const Setting& s);
void check_neighbor_alltoallv(const Setting& s);
void check_neighbor_alltoallw(const Setting& s);

// Counts used by most checks: empty, one, around P, odd, and large.
inline std::vector<int> counts_for(int size)
{
    return {0, 1, size > 1 ? size - 1 : 2, size, size + 1, 37, 1000, 65539};
}

// ---- reference arithmetic (MPI semantics; integers wrap) ----
template <class T>
T combine(MPI_Op op, T a, T b)
{
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        if (op == MPI_SUM) return T(U(a) + U(b));
        if (op == MPI_PROD) return T(U(a) * U(b));
        if (op == MPI_LAND) return T(a && b);
        if (op == MPI_LOR) return T(a || b);
        if (op == MPI_LXOR) return T(!a != !b);
        if (op == MPI_BAND) return T(a & b);
        if (op == MPI_BOR) return T(a | b);
        if (op == MPI_BXOR) return T(a ^ b);
    } else {
        if (op == MPI_SUM) return a + b;
        if (op == MPI_PROD) return a * b;
    }
    if (op == MPI_MIN) return b < a ? b : a;
    if (op == MPI_MAX) return a < b ? b : a;
    return T(0);
}

// Rank r's element i: exact in floating point whatever the order of the reduction (small
// integers for sums, powers of two for products), zeros for the logical ops, and values
// whose uint8 sums wrap past 255.
template <class T>
T input(MPI_Op op, int r, std::size_t i)
{
    const int v = int((std::size_t(r) * 7 + i * 3) % 11);
    if (op == MPI_PROD) {
        if constexpr (std::is_floating_point_v<T>) return v % 3 == 0 ? T(1) : v % 3 == 1 ? T(2) : T(0.5);
        return T(v % 3 + 1);
    }
    if constexpr (std::is_same_v<T, std::uint8_t>) return T(200 + v * 5);
    return T(v - 4);
}

template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<int>()
{
    return MPI_INT;
}
template <>
inline MPI_Datatype mpi_type<std::int64_t>()
{
    return MPI_INT64_T;
}
template <>
inline MPI_Datatype mpi_type<std::uint8_t>()
{
    return MPI_UINT8_T;
}
template <>
inline MPI_Datatype mpi_type<float>()
{
    return MPI_FLOAT;
}
template <>
inline MPI_Datatype mpi_type<double>()
{
    return MPI_DOUBLE;
}

// ---- user-defined ops ----
// Commutative sum on MPI_INT.
void user_int_sum(void* in, void* inout, int* len, MPI_Datatype*);
// Commutative sum of ints 0 and 2 of a 3- or 4-int element with holes (see make_holey_types).
void user_holey_sum(void* in, void* inout, int* len, MPI_Datatype* type);
// Non-commutative, associative: 2x2 uint32 matrix product on 4 x MPI_UINT32_T elements.
void user_matmul(void* in, void* inout, int* len, MPI_Datatype*);
// Rank r's e-th matrix, chosen so that matrices of different ranks do not commute.
std::vector<std::uint32_t> matrix(int r, std::size_t e);

// Types with holes: {int, hole, int} (vector) and {int, hole, int, hole} (resized to 16 B).
struct HoleyTypes {
    MPI_Datatype vector, padded;
};
HoleyTypes make_holey_types();
void free_holey_types(HoleyTypes& t);

} // namespace check

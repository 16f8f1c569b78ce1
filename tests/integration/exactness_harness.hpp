// The harness of exactness_check (see exactness_check.cpp): guarded buffers compared byte for
// byte with the image MPI defines, the element layouts the checks use, the input values and
// their reference reductions (computed here, never by Open MPI), and the runner of one call
// that also reads loom's MPI_T counters.
//
// A Buffer is one allocation: kGuard bytes, the body the call sees, kGuard bytes. Every byte
// starts as a pattern value; the check writes its inputs, freeze()s the whole allocation as
// the expected image, replaces in that image only the bytes MPI defines as output (expect()),
// and after the call compares the whole allocation with it. Parts name ranges of the body so
// that a difference is reported with the region it falls in.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "registry.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace exact {

// Element layouts. ints: MPI_INT. vector: MPI_Type_vector(2, 1, 2, MPI_INT) = {int, hole, int},
// extent 12. padded: that vector resized to an extent of 16 = {int, hole, int, hole}.
enum class Shape { ints, vector, padded };
void make_types();
void free_types();
MPI_Datatype mpi_type(Shape s);
const char* name(Shape s);
std::size_t extent(Shape s);
std::size_t ints_per(Shape s);
// Byte offset of the k-th int of a run of elements of this shape.
std::size_t int_offset(Shape s, std::size_t k);

// Scrambled, distinct values: value(a, b, k) for data movement (a from b, or a to b), input(r, k)
// for rank r's k-th input int of a reduction, and the wrapping int32 sum of input(*, k).
int value(int a, int b, std::size_t k);
inline int input(int r, std::size_t k) { return value(r, -1, k); }
int sum_of_inputs(int size, std::size_t k);
// A commutative user-defined op: the wrapping sum of both ints of a vector or padded element
// (holes untouched).
void holey_sum(void* in, void* inout, int* len, MPI_Datatype* type);

class Buffer {
public:
    static constexpr std::size_t kGuard = 128;
    Buffer(std::string role, std::size_t body_bytes, unsigned seed);
    void* body() { return mem_.data() + kGuard; }
    // Contents before the call.
    void put(std::size_t offset, int v);
    // Names `elements` elements of `shape` from body offset `offset` (`detail`, e.g. "of rank 3",
    // is left out of the summary's grouping); bytes outside every part are named by `outside`.
    void part(std::string name, std::size_t offset, std::size_t elements, Shape shape, std::string detail = "");
    void outside(std::string name) { outside_ = std::move(name); }
    // The expected image: the contents now, then expect() where MPI defines the output.
    void freeze() { expected_ = mem_; }
    void expect(std::size_t offset, int v);
    // Empty if the allocation equals the expected image; else the first differing byte, its
    // region and how many bytes differ. *region gets the region's name without element numbers.
    std::string compare(std::string* region) const;

private:
    struct Part {
        std::string name, detail;
        std::size_t offset, elements;
        Shape shape;
    };
    std::string describe(std::size_t at, std::string* region) const;
    std::string role_;
    std::size_t body_bytes_;
    std::vector<unsigned char> mem_, expected_;
    std::vector<Part> parts_;
    std::string outside_ = "outside every part MPI defines";
};

// The communicator and forced algorithm a group of calls runs with.
struct Setting {
    MPI_Comm comm;
    const char* comm_name;
    int rank, size;
    int nodes, most; // nodes the communicator spans, most ranks on one node
    loom::Collective collective;
    const loom::Algorithm* forced; // nullptr: loom's own choice
    std::string label;             // "" (loom's choice), "ring", "pat@256", "binomial segment=4096", ...
    bool stencil = false;          // a neighbourhood collective's communicator is a stencil (combining.hpp)
};

// Runs one call: the buffers (nulls skipped) are frozen and expected by the caller. Compares
// every buffer with its image and checks loom's counters: a forced algorithm that can serve
// the call (loom::why_not) must have served it if it reached loom, and one that cannot must
// have declined it. `kind` groups failures in the summary ("in-place", "vector", ...).
void run_case(const Setting& s, const std::string& what, const std::string& kind, std::size_t message_bytes,
              std::initializer_list<Buffer*> buffers, const std::function<void()>& call);
void fail(const Setting& s, const std::string& what, const std::string& key);

// Totals of this process. calls_servable/calls_served: calls of the current forced algorithm
// (reset by the caller) that loom::why_not says it can serve, and that loom served.
struct Totals {
    long checks = 0, failures = 0, calls_servable = 0, calls_served = 0;
    int print_limit = 4;
    std::map<std::string, long> by_key; // failures per collective/algorithm/kind/region
};
extern Totals totals;

// The checks, one function per collective (exactness_reductions.cpp, exactness_data_movement.cpp).
void check_allreduce(const Setting& s);
void check_scan(const Setting& s);
void check_exscan(const Setting& s);
void check_gather(const Setting& s);
void check_scatter(const Setting& s);
void check_gatherv(const Setting& s);
void check_scatterv(const Setting& s);
void check_alltoallv(const Setting& s);
void check_alltoallw(const Setting& s);
void check_reduce(const Setting& s);
void check_reduce_scatter_block(const Setting& s);
void check_reduce_scatter(const Setting& s);
void check_allgather(const Setting& s);
void check_allgatherv(const Setting& s);
void check_bcast(const Setting& s);
void check_alltoall(const Setting& s);
void check_barrier(const Setting& s);
// exactness_neighbours.cpp: on topology communicators made over s.comm.
void check_neighbor_allgather(const Setting& s);
void check_neighbor_allgatherv(const Setting& s);
void check_neighbor_alltoall(const Setting& s);
void check_neighbor_alltoallv(const Setting& s);
void check_neighbor_alltoallw(const Setting& s);

// Counts every check uses: empty, one, P-1, odd, and large enough to cut segments (one
// 256 KiB segment is 65536 ints).
inline std::vector<int> counts_for(int size)
{
    if (size <= 2) return {0, 1, 37, 65539}; // P-1 is 1 (or 0)
    return {0, 1, size - 1, 37, 65539};
}
inline std::string in_place_text(bool in_place) { return in_place ? " in-place" : ""; }

} // namespace exact

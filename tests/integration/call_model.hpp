// One call of any collective, made from its row of algorithms/collectives.def (layout, reduces,
// rooted, signature class): its buffers, its arguments for the three-form caller
// (tools/common/mpi_call.hpp), its inputs and the reference result, computed here. Tests that
// run every collective alike (repeat_check, drop_in_check --part orders) build their calls
// here, so a new row with a known layout is tested there without a line of code.
//
// Elements are one predefined type (MPI_INT, MPI_DOUBLE, MPI_SHORT, MPI_SIGNED_CHAR), inputs
// small integers (exact in every type and under sum and max at up to 11 ranks). By layout:
//   vector     a vector of count elements (bcast: the root's; a reduction: every rank's input,
//              its result on every rank, the root only (reduce) or a prefix (scan, exscan)
//   split      the whole vector in, block r of it out (reduce_scatter: blocks differ by rank)
//   gathered   block r in, every block out (on the root only if rooted), at displacements
//   scattered  every block in at the root, block r out
//   per_peer(_v)  a block to and from every rank (alltoallv/w: sizes differ by pair; in place:
//              made symmetric, as MPI's in place needs)
//   neighbour_gathered, per_neighbour  a block to every neighbour of the communicator's process
//              topology (one block for the allgathers), count elements each, end to end; on a
//              communicator without one, the call makes a periodic ring (MPI_Cart_create) over it
//              and runs there; a block of MPI_PROC_NULL must stay untouched
// Per-rank counts (the signature gives a count per rank): count + (rank + shift) % 3, so one
// shift spreads the same sum differently. With gaps, blocks lie in reverse rank order with an
// element between them. After a call, every element of the receive buffer must be the result
// where MPI puts one and, outside it (gaps, a non-root's buffer, exscan's rank 0), what was
// there before (-1); an in-place call's input outside its result is not checked.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "mpi_call.hpp"
#include "neighbour_comms.hpp"
#include "registry.hpp"

#include <string>
#include <vector>

namespace model {

struct Spec {
    loom::Collective collective = loom::Collective::allreduce;
    int count = 0; // elements: the vector, or one rank's block
    MPI_Datatype type = MPI_INT;
    MPI_Op op = MPI_SUM; // reductions: MPI_SUM or MPI_MAX
    int root = 0;
    bool in_place = false; // ignored where MPI has no in place (bcast, barrier)
    int shift = 0;         // per-rank counts: see above
    bool gaps = false;     // v-collectives: blocks reversed, an element apart
    std::string text() const;
};

// Whether MPI lets the collective's call be in place.
bool has_in_place(loom::Collective c);

class Call {
public:
    Call(const Spec& spec, MPI_Comm comm);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    // Writes the inputs of call `salt` and sets the receive buffer to -1 (in place: the inputs
    // there).
    void fill(int salt);
    // "" if the receive buffer holds what call `salt` must leave, else the first difference.
    std::string check(int salt) const;

    // The buffers fill() writes and check() reads, and the arguments with the buffers elsewhere
    // (device memory): a test copies the images there before the call and back after it.
    std::vector<unsigned char>& send_image() { return send_; }
    std::vector<unsigned char>& recv_image() { return recv_; }
    loom::tools::CallArgs args_on(const void* send, void* recv) const;

    const Spec spec;
    loom::tools::CallArgs args; // points into the vectors below

private:
    int rank_, size_, elem_;
    long send_n_ = 0, recv_n_ = 0; // elements of the call in send_ and recv_
    std::vector<unsigned char> send_, recv_;
    std::vector<int> blocks_, scounts_, sdispls_, rcounts_, rdispls_; // blocks_: each rank's count (elements)
    std::vector<MPI_Datatype> types_;                                 // alltoallw: spec.type per peer
    std::vector<MPI_Aint> sadispls_, radispls_;                       // neighbor_alltoallw's
    MPI_Comm own_comm_ = MPI_COMM_NULL;                               // the ring made for a neighbourhood call
    loom::test::Topology topology_;                                   // the neighbourhood collectives'
    std::vector<int> sat_, rat_; // element offsets of the blocks in send_ and recv_
    bool here_in_place_ = false; // this rank's call is in place
    bool has_result_ = false;    // MPI writes a result on this rank
    int pair(int from, int to) const;
    long expected(long i, int salt) const;
};

// Rank r's element i of call `salt` (from: r; for a block to rank q, r * size + q).
int value(int r, long i, int salt);

} // namespace model

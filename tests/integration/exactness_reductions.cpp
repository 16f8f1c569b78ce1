// exactness_check, the reducing collectives: allreduce, reduce, reduce_scatter_block,
// reduce_scatter and scan. Each call runs on guarded buffers (exactness_harness.hpp) and must leave
// every byte as MPI defines it:
//   * the result where MPI puts it, computed here (int32 SUM wraps; never Open MPI's kernel);
//   * send buffers byte for byte unchanged;
//   * the holes of {int, hole, int} and {int, hole, int, hole} (reduced by a commutative
//     user-defined op; Open MPI's MPI layer rejects a predefined op on a derived datatype)
//     untouched;
//   * at non-root ranks of MPI_Reduce, the receive buffer untouched;
//   * in place reduce_scatter(_block), the input past rcounts[rank] left exactly as it was.
#include "exactness_harness.hpp"

#include <memory>

namespace exact {

namespace {

struct Reduction {
    MPI_Op op;
    Shape shape;
};

std::string describe(const char* what, int count, Shape shape, bool in_place)
{
    return std::string(what) + "count=" + std::to_string(count) + " " + name(shape) + in_place_text(in_place);
}

std::string kind_of(Shape shape, bool in_place)
{
    return std::string(shape == Shape::ints ? "" : name(shape)) + (shape != Shape::ints && in_place ? " " : "") +
           (in_place ? "in-place" : "");
}

// Rank `rank`'s input: ints first_int, first_int + 1, ... of the whole vector.
void fill_input(Buffer& b, Shape shape, std::size_t ints, int rank, std::size_t first_int = 0)
{
    for (std::size_t k = 0; k < ints; ++k) b.put(int_offset(shape, k), input(rank, first_int + k));
}

// MPI_Allreduce, or MPI_Scan (rank r's result: the inputs of ranks 0..r), or MPI_Exscan (0..r-1;
// rank 0's result is undefined in MPI, and must stay as it was: loom and Open MPI leave it).
enum class Prefix { none, inclusive, exclusive };
void allreduce_case(const Setting& s, int count, bool in_place, Reduction red, Prefix prefix = Prefix::none)
{
    const std::size_t bytes = std::size_t(count) * extent(red.shape), ints = std::size_t(count) * ints_per(red.shape);
    Buffer recv("receive buffer", bytes, 2 + unsigned(s.rank) * 8);
    std::unique_ptr<Buffer> send;
    if (!in_place) send = std::make_unique<Buffer>("send buffer", bytes, 1 + unsigned(s.rank) * 8);
    Buffer& in = in_place ? recv : *send;
    fill_input(in, red.shape, ints, s.rank);
    if (send) send->part("input", 0, std::size_t(count), red.shape);
    recv.part("result", 0, std::size_t(count), red.shape);
    recv.freeze();
    if (send) send->freeze();
    const int ranks = prefix == Prefix::none ? s.size : prefix == Prefix::inclusive ? s.rank + 1 : s.rank;
    for (std::size_t k = 0; ranks > 0 && k < ints; ++k)
        recv.expect(int_offset(red.shape, k), sum_of_inputs(ranks, k));
    run_case(s, describe("", count, red.shape, in_place), kind_of(red.shape, in_place), bytes, {send.get(), &recv},
             [&] {
                 const void* sbuf = in_place ? MPI_IN_PLACE : send->body();
                 if (prefix == Prefix::inclusive)
                     MPI_Scan(sbuf, recv.body(), count, mpi_type(red.shape), red.op, s.comm);
                 else if (prefix == Prefix::exclusive)
                     MPI_Exscan(sbuf, recv.body(), count, mpi_type(red.shape), red.op, s.comm);
                 else
                     MPI_Allreduce(sbuf, recv.body(), count, mpi_type(red.shape), red.op, s.comm);
             });
}

void reduce_case(const Setting& s, int root, int count, bool in_place, Reduction red)
{
    const bool is_root = s.rank == root, root_in_place = in_place && is_root;
    const std::size_t bytes = std::size_t(count) * extent(red.shape), ints = std::size_t(count) * ints_per(red.shape);
    Buffer recv("receive buffer", bytes, 2 + unsigned(s.rank) * 8);
    std::unique_ptr<Buffer> send;
    if (!root_in_place) send = std::make_unique<Buffer>("send buffer", bytes, 1 + unsigned(s.rank) * 8);
    fill_input(root_in_place ? recv : *send, red.shape, ints, s.rank);
    if (send) send->part("input", 0, std::size_t(count), red.shape);
    if (is_root)
        recv.part("result", 0, std::size_t(count), red.shape);
    else
        recv.outside("a non-root's receive buffer (MPI_Reduce must not write it)");
    recv.freeze();
    if (send) send->freeze();
    if (is_root)
        for (std::size_t k = 0; k < ints; ++k) recv.expect(int_offset(red.shape, k), sum_of_inputs(s.size, k));
    const std::string what = describe("", count, red.shape, in_place) + " root=" + std::to_string(root);
    run_case(s, what, kind_of(red.shape, in_place), bytes, {send.get(), &recv}, [&] {
        MPI_Reduce(root_in_place ? MPI_IN_PLACE : send->body(), recv.body(), count, mpi_type(red.shape), red.op, root,
                   s.comm);
    });
}

// Rank i gets counts[i] elements; in place, the receive buffer holds the whole input and only
// its first counts[rank] elements are output.
void reduce_scatter_case(const Setting& s, const std::vector<int>& counts, bool in_place, Reduction red,
                         const std::string& label, bool block)
{
    std::size_t total = 0, first = 0;
    for (int i = 0; i < s.size; ++i) {
        if (i == s.rank) first = total;
        total += std::size_t(counts[std::size_t(i)]);
    }
    const std::size_t mine = std::size_t(counts[std::size_t(s.rank)]), ext = extent(red.shape),
                      per = ints_per(red.shape);
    Buffer recv("receive buffer", (in_place ? total : mine) * ext, 2 + unsigned(s.rank) * 8);
    std::unique_ptr<Buffer> send;
    if (!in_place) send = std::make_unique<Buffer>("send buffer", total * ext, 1 + unsigned(s.rank) * 8);
    fill_input(in_place ? recv : *send, red.shape, total * per, s.rank);
    if (send) send->part("input", 0, total, red.shape);
    recv.part("result block", 0, mine, red.shape);
    if (in_place) recv.part("input past rcounts[rank] (must be left as it was)", mine * ext, total - mine, red.shape);
    recv.freeze();
    if (send) send->freeze();
    for (std::size_t k = 0; k < mine * per; ++k)
        recv.expect(int_offset(red.shape, k), sum_of_inputs(s.size, first * per + k));
    const std::string what = label + " " + name(red.shape) + in_place_text(in_place);
    run_case(s, what, kind_of(red.shape, in_place), total * ext, {send.get(), &recv}, [&] {
        const void* sb = in_place ? MPI_IN_PLACE : send->body();
        if (block)
            MPI_Reduce_scatter_block(sb, recv.body(), counts[0], mpi_type(red.shape), red.op, s.comm);
        else
            MPI_Reduce_scatter(sb, recv.body(), counts.data(), mpi_type(red.shape), red.op, s.comm);
    });
}

struct HoleyOp {
    MPI_Op op;
    HoleyOp() { MPI_Op_create(holey_sum, 1, &op); }
    ~HoleyOp() { MPI_Op_free(&op); }
};

} // namespace

void check_allreduce(const Setting& s)
{
    for (int count : counts_for(s.size))
        for (bool in_place : {false, true}) allreduce_case(s, count, in_place, {MPI_SUM, Shape::ints});
    HoleyOp holey;
    for (Shape shape : {Shape::vector, Shape::padded})
        for (int count : {1, 37})
            for (bool in_place : {false, true}) allreduce_case(s, count, in_place, {holey.op, shape});
}

namespace {
void prefix_cases(const Setting& s, Prefix prefix)
{
    for (int count : counts_for(s.size))
        for (bool in_place : {false, true}) allreduce_case(s, count, in_place, {MPI_SUM, Shape::ints}, prefix);
    HoleyOp holey;
    for (Shape shape : {Shape::vector, Shape::padded})
        for (int count : {1, 37})
            for (bool in_place : {false, true}) allreduce_case(s, count, in_place, {holey.op, shape}, prefix);
}
} // namespace

void check_scan(const Setting& s) { prefix_cases(s, Prefix::inclusive); }
void check_exscan(const Setting& s) { prefix_cases(s, Prefix::exclusive); }

void check_reduce(const Setting& s)
{
    std::vector<int> roots = {0};
    for (int root : {s.size - 1, s.size / 2})
        if (root != roots.back() && root != 0) roots.push_back(root);
    HoleyOp holey;
    for (int root : roots) {
        for (int count : counts_for(s.size))
            for (bool in_place : {false, true}) reduce_case(s, root, count, in_place, {MPI_SUM, Shape::ints});
        for (Shape shape : {Shape::vector, Shape::padded})
            for (bool in_place : {false, true}) reduce_case(s, root, 37, in_place, {holey.op, shape});
    }
}

void check_reduce_scatter_block(const Setting& s)
{
    const std::size_t P = std::size_t(s.size);
    for (int count : counts_for(s.size))
        for (bool in_place : {false, true})
            reduce_scatter_case(s, std::vector<int>(P, count), in_place, {MPI_SUM, Shape::ints},
                                "count=" + std::to_string(count), true);
    HoleyOp holey;
    for (Shape shape : {Shape::vector, Shape::padded})
        for (int count : {1, 37})
            for (bool in_place : {false, true})
                reduce_scatter_case(s, std::vector<int>(P, count), in_place, {holey.op, shape},
                                    "count=" + std::to_string(count), true);
}

void check_reduce_scatter(const Setting& s)
{
    const std::size_t P = std::size_t(s.size);
    // Irregular counts with zeros (rank 1, 4, 7, ... get nothing), small and large (about
    // 65539 elements in all), and a single non-empty block on the last rank.
    std::vector<int> irregular(P), large(P), last_only(P, 0);
    for (int i = 0; i < s.size; ++i) {
        irregular[std::size_t(i)] = i % 3 == 1 ? 0 : (i * 7 + 1) % 23 + 1;
        large[std::size_t(i)] = i % 3 == 1 ? 0 : 65539 / s.size + i * 3;
    }
    last_only[P - 1] = 37;
    const std::vector<std::pair<std::string, std::vector<int>>> cases = {
        {"counts 0", std::vector<int>(P, 0)},
        {"counts 1", std::vector<int>(P, 1)},
        {"counts P-1", std::vector<int>(P, s.size - 1)},
        {"counts 37", std::vector<int>(P, 37)},
        {"irregular counts", irregular},
        {"large irregular counts", large},
        {"last rank only", last_only}};
    for (const auto& [label, counts] : cases)
        for (bool in_place : {false, true})
            reduce_scatter_case(s, counts, in_place, {MPI_SUM, Shape::ints}, label, false);
    HoleyOp holey;
    for (Shape shape : {Shape::vector, Shape::padded})
        for (bool in_place : {false, true})
            reduce_scatter_case(s, irregular, in_place, {holey.op, shape}, "irregular counts", false);
}

} // namespace exact

// exactness_check, the data-movement collectives: allgather, allgatherv, bcast, alltoall and
// barrier. Each call runs on guarded buffers (exactness_harness.hpp) and must leave every
// byte as MPI defines it:
//   * each received int where the receive type and displacements put it (value(from, to, k)
//     says which rank sent it, to whom and which of its ints it is);
//   * send buffers (and bcast's root buffer) byte for byte unchanged;
//   * the holes of {int, hole, int} and {int, hole, int, hole} untouched, also when the send
//     side uses a different but signature-compatible type (2k MPI_INT sent, k vectors received);
//   * the gaps between allgatherv blocks (displacements with gaps, blocks out of rank order);
//   * in place allgather(v), the rank's own block keeps its values.
#include "exactness_harness.hpp"

#include <algorithm>
#include <memory>

namespace exact {

namespace {

// One side of a call: count elements of shape.
struct Side {
    int count;
    Shape shape;
    std::size_t ints() const { return std::size_t(count) * ints_per(shape); }
    std::size_t bytes() const { return std::size_t(count) * extent(shape); }
};

std::string describe(Side send, Side recv, bool in_place)
{
    std::string text = "count=" + std::to_string(recv.count) + " " + name(recv.shape);
    if (!in_place && (send.shape != recv.shape || send.count != recv.count))
        text += " (sent as " + std::to_string(send.count) + " " + name(send.shape) + ")";
    return text + in_place_text(in_place);
}

std::string kind_of(Side send, Side recv, bool in_place)
{
    std::string kind = recv.shape == Shape::ints && (in_place || send.shape == Shape::ints) ? "" : "holey";
    return kind + (!kind.empty() && in_place ? " " : "") + (in_place ? "in-place" : "");
}

// Block b (of bytes each) of `buf` holds value(from, to, k) in `side`'s layout.
void put_block(Buffer& buf, std::size_t at, Side side, int from, int to)
{
    for (std::size_t k = 0; k < side.ints(); ++k) buf.put(at + int_offset(side.shape, k), value(from, to, k));
}
void expect_block(Buffer& buf, std::size_t at, Side side, int from, int to)
{
    for (std::size_t k = 0; k < side.ints(); ++k) buf.expect(at + int_offset(side.shape, k), value(from, to, k));
}

// allgatherv: block of rank r holds counts[r] elements of recv_shape at displs[r]; displs follow
// `order` with `gap` elements before every block. The rank sends its block as `send_shape`
// (2 ints per element of a holey shape: signature-compatible with counts of MPI_INT x2).
void allgatherv_case(const Setting& s, const std::vector<int>& counts, const std::vector<int>& order, int gap,
                     Shape send_shape, Shape recv_shape, bool in_place, const std::string& label)
{
    const std::size_t P = std::size_t(s.size), ext = extent(recv_shape);
    std::vector<int> displs(P);
    int next = gap;
    for (int r : order) displs[std::size_t(r)] = next, next += counts[std::size_t(r)] + gap;
    const Side recv_side{counts[std::size_t(s.rank)], recv_shape};
    const Side send_side{int(recv_side.ints() / ints_per(send_shape)), send_shape};
    Buffer recv("receive buffer", std::size_t(next) * ext, 2 + unsigned(s.rank) * 8);
    recv.outside("a gap between allgatherv blocks");
    std::unique_ptr<Buffer> send;
    if (in_place)
        put_block(recv, std::size_t(displs[std::size_t(s.rank)]) * ext, recv_side, s.rank, -1);
    else {
        send = std::make_unique<Buffer>("send buffer", send_side.bytes(), 1 + unsigned(s.rank) * 8);
        put_block(*send, 0, send_side, s.rank, -1);
        send->part("send block", 0, std::size_t(send_side.count), send_shape);
        send->freeze();
    }
    for (std::size_t r = 0; r < P; ++r)
        recv.part("block", std::size_t(displs[r]) * ext, std::size_t(counts[r]), recv_shape,
                  "of rank " + std::to_string(r));
    recv.freeze();
    std::size_t bytes = 0;
    for (std::size_t r = 0; r < P; ++r) {
        expect_block(recv, std::size_t(displs[r]) * ext, Side{counts[r], recv_shape}, int(r), -1);
        bytes += std::size_t(counts[r]) * ints_per(recv_shape) * 4;
    }
    run_case(s, label + " " + describe(send_side, recv_side, in_place), kind_of(send_side, recv_side, in_place), bytes,
             {send.get(), &recv}, [&] {
                 MPI_Allgatherv(in_place ? MPI_IN_PLACE : send->body(), send_side.count, mpi_type(send_shape),
                                recv.body(), counts.data(), displs.data(), mpi_type(recv_shape), s.comm);
             });
}

// MPI_Allgather (root < 0), or MPI_Gather to `root`: every receive buffer, or the root's, gets
// every block; a gather's other ranks (passing real buffers with the root's receive arguments)
// must leave theirs untouched, and only the root may be in place.
void gathered_case(const Setting& s, int root, Side send_side, Side recv_side, bool in_place)
{
    const bool has_result = root < 0 || s.rank == root, here_in_place = in_place && has_result;
    const std::size_t P = std::size_t(s.size), block = recv_side.bytes();
    Buffer recv("receive buffer", P * block, 2 + unsigned(s.rank) * 8);
    std::unique_ptr<Buffer> send;
    if (here_in_place)
        put_block(recv, std::size_t(s.rank) * block, recv_side, s.rank, -1);
    else {
        send = std::make_unique<Buffer>("send buffer", send_side.bytes(), 1 + unsigned(s.rank) * 8);
        put_block(*send, 0, send_side, s.rank, -1);
        send->part("send block", 0, std::size_t(send_side.count), send_side.shape);
        send->freeze();
    }
    for (std::size_t r = 0; r < P; ++r)
        recv.part("block", r * block, std::size_t(recv_side.count), recv_side.shape, "of rank " + std::to_string(r));
    recv.freeze();
    if (has_result)
        for (std::size_t r = 0; r < P; ++r) expect_block(recv, r * block, recv_side, int(r), -1);
    const std::string what = describe(send_side, recv_side, in_place) + (root < 0 ? "" : " root=" + std::to_string(root));
    run_case(s, what, kind_of(send_side, recv_side, in_place), P * recv_side.ints() * 4, {send.get(), &recv}, [&] {
        const void* sbuf = here_in_place ? MPI_IN_PLACE : send->body();
        if (root < 0)
            MPI_Allgather(sbuf, send_side.count, mpi_type(send_side.shape), recv.body(), recv_side.count,
                          mpi_type(recv_side.shape), s.comm);
        else
            MPI_Gather(sbuf, send_side.count, mpi_type(send_side.shape), recv.body(), recv_side.count,
                       mpi_type(recv_side.shape), root, s.comm);
    });
}

// gatherv to `root` / scatterv from it: rank r's block holds counts[r] elements of root_shape at
// displs[r] of the root's buffer (displacements follow `order` with `gap` elements before every
// block); rank r passes its block as other_shape (signature-compatible). Only the root passes
// counts and displacements. The root's gaps stay untouched (gatherv) or its buffer unchanged
// (scatterv); in place the root's block stays where it is.
void rooted_v_case(const Setting& s, bool gather, int root, const std::vector<int>& counts,
                   const std::vector<int>& order, int gap, Shape other_shape, Shape root_shape, bool in_place,
                   const std::string& label)
{
    const std::size_t P = std::size_t(s.size), ext = extent(root_shape);
    const bool is_root = s.rank == root, here_in_place = in_place && is_root;
    std::vector<int> displs(P);
    int next = gap;
    for (int r : order) displs[std::size_t(r)] = next, next += counts[std::size_t(r)] + gap;
    const Side root_side{counts[std::size_t(s.rank)], root_shape};
    const Side mine{int(root_side.ints() / ints_per(other_shape)), other_shape};
    std::unique_ptr<Buffer> whole, block;
    if (is_root) {
        whole = std::make_unique<Buffer>(gather ? "receive buffer" : "send buffer", std::size_t(next) * ext,
                                         2 + unsigned(s.rank) * 8);
        whole->outside(gather ? "a gap between gatherv blocks" : "a gap between scatterv blocks");
        for (std::size_t r = 0; r < P; ++r) {
            if (!gather || (here_in_place && int(r) == s.rank))
                put_block(*whole, std::size_t(displs[r]) * ext, Side{counts[r], root_shape}, int(r), -1);
            whole->part("block", std::size_t(displs[r]) * ext, std::size_t(counts[r]), root_shape,
                        "of rank " + std::to_string(r));
        }
        whole->freeze();
        if (gather)
            for (std::size_t r = 0; r < P; ++r)
                expect_block(*whole, std::size_t(displs[r]) * ext, Side{counts[r], root_shape}, int(r), -1);
    }
    if (!here_in_place) {
        block = std::make_unique<Buffer>(gather ? "send buffer" : "receive buffer", mine.bytes(), 1 + unsigned(s.rank) * 8);
        if (gather) put_block(*block, 0, mine, s.rank, -1);
        block->part(gather ? "send block" : "block", 0, std::size_t(mine.count), other_shape);
        block->freeze();
        if (!gather) expect_block(*block, 0, mine, s.rank, -1);
    }
    std::size_t bytes = 0;
    for (std::size_t r = 0; r < P; ++r) bytes += std::size_t(counts[r]) * ints_per(root_shape) * 4;
    const std::string what = label + " " + describe(mine, root_side, in_place) + " root=" + std::to_string(root);
    run_case(s, what, kind_of(mine, root_side, in_place), bytes, {whole.get(), block.get()}, [&] {
        void* all = is_root ? whole->body() : nullptr;
        const int* c = is_root ? counts.data() : nullptr;
        const int* d = is_root ? displs.data() : nullptr;
        void* own = here_in_place ? MPI_IN_PLACE : block->body();
        if (gather)
            MPI_Gatherv(own, mine.count, mpi_type(other_shape), all, c, d, mpi_type(root_shape), root, s.comm);
        else
            MPI_Scatterv(all, c, d, mpi_type(root_shape), own, mine.count, mpi_type(other_shape), root, s.comm);
    });
}

// MPI_Alltoallv (w: MPI_Alltoallw, displacements in bytes, a datatype per peer): rank r sends
// c(r, q) elements of `shape` to rank q; the send blocks lie in reversed rank order, the receive
// blocks in rank order, each after a gap of one element that must stay untouched. In place the
// receive layout serves both ways (c symmetric).
void alltoall_v_case(const Setting& s, bool w, Shape shape, int scale, bool in_place)
{
    const int P = s.size, me = s.rank;
    const std::size_t ext = extent(shape);
    auto c = [&](int from, int to) {
        const int a = in_place ? std::min(from, to) : from, b = in_place ? std::max(from, to) : to;
        const int k = (a * 7 + b * 3) % 5;
        return k == 0 ? 0 : k * scale;
    };
    const auto n = static_cast<std::size_t>(P);
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    int snext = 1, rnext = 1;
    for (int k = 0; k < P; ++k) {
        const auto q = std::size_t(P - 1 - k);
        sc[q] = c(me, int(q)), sd[q] = snext, snext += sc[q] + 1;
    }
    for (int q = 0; q < P; ++q) rc[std::size_t(q)] = c(q, me), rd[std::size_t(q)] = rnext, rnext += rc[std::size_t(q)] + 1;
    Buffer recv("receive buffer", std::size_t(rnext) * ext, 2 + unsigned(me) * 8);
    recv.outside("a gap between blocks");
    std::unique_ptr<Buffer> send;
    if (in_place) {
        for (int q = 0; q < P; ++q) put_block(recv, std::size_t(rd[std::size_t(q)]) * ext, Side{rc[std::size_t(q)], shape}, me, q);
    } else {
        send = std::make_unique<Buffer>("send buffer", std::size_t(snext) * ext, 1 + unsigned(me) * 8);
        send->outside("a gap between blocks");
        for (int q = 0; q < P; ++q) {
            put_block(*send, std::size_t(sd[std::size_t(q)]) * ext, Side{sc[std::size_t(q)], shape}, me, q);
            send->part("block", std::size_t(sd[std::size_t(q)]) * ext, std::size_t(sc[std::size_t(q)]), shape,
                       "to rank " + std::to_string(q));
        }
        send->freeze();
    }
    for (int q = 0; q < P; ++q)
        recv.part("block", std::size_t(rd[std::size_t(q)]) * ext, std::size_t(rc[std::size_t(q)]), shape,
                  "from rank " + std::to_string(q));
    recv.freeze();
    for (int q = 0; q < P; ++q) expect_block(recv, std::size_t(rd[std::size_t(q)]) * ext, Side{rc[std::size_t(q)], shape}, q, me);
    const std::string what = "scale=" + std::to_string(scale) + " " + name(shape) + in_place_text(in_place);
    run_case(s, what, kind_of({1, shape}, {1, shape}, in_place), 0, {send.get(), &recv}, [&] {
        const void* sbuf = in_place ? MPI_IN_PLACE : send->body();
        if (!w) {
            MPI_Alltoallv(sbuf, sc.data(), sd.data(), mpi_type(shape), recv.body(), rc.data(), rd.data(), mpi_type(shape),
                          s.comm);
            return;
        }
        std::vector<int> sdb(sd), rdb(rd);
        for (int& d : sdb) d *= int(ext);
        for (int& d : rdb) d *= int(ext);
        const std::vector<MPI_Datatype> types(std::size_t(P), mpi_type(shape));
        MPI_Alltoallw(sbuf, sc.data(), sdb.data(), types.data(), recv.body(), rc.data(), rdb.data(), types.data(), s.comm);
    });
}

// MPI_Scatter from `root`: block r of the root's send buffer (send_side each) goes to rank r's
// receive buffer (recv_side); the root's send buffer is unchanged, and in place (MPI_IN_PLACE as
// its receive buffer) the root receives nothing.
void scattered_case(const Setting& s, int root, Side send_side, Side recv_side, bool in_place)
{
    const bool is_root = s.rank == root, here_in_place = in_place && is_root;
    const std::size_t P = std::size_t(s.size), block = send_side.bytes();
    std::unique_ptr<Buffer> send, recv;
    if (is_root) {
        send = std::make_unique<Buffer>("send buffer", P * block, 1 + unsigned(s.rank) * 8);
        for (std::size_t q = 0; q < P; ++q) {
            put_block(*send, q * block, send_side, int(q), -1);
            send->part("block", q * block, std::size_t(send_side.count), send_side.shape, "for rank " + std::to_string(q));
        }
        send->freeze();
    }
    if (!here_in_place) {
        recv = std::make_unique<Buffer>("receive buffer", recv_side.bytes(), 2 + unsigned(s.rank) * 8);
        recv->part("block", 0, std::size_t(recv_side.count), recv_side.shape);
        recv->freeze();
        expect_block(*recv, 0, recv_side, s.rank, -1);
    }
    const std::string what = describe(send_side, recv_side, in_place) + " root=" + std::to_string(root);
    run_case(s, what, kind_of(send_side, recv_side, in_place), P * recv_side.ints() * 4, {send.get(), recv.get()}, [&] {
        MPI_Scatter(is_root ? send->body() : nullptr, send_side.count, mpi_type(send_side.shape),
                    here_in_place ? MPI_IN_PLACE : recv->body(), recv_side.count, mpi_type(recv_side.shape), root,
                    s.comm);
    });
}

// The root passes root_side, every other rank other_side (same signature).
void bcast_case(const Setting& s, int root, Side root_side, Side other_side)
{
    const bool is_root = s.rank == root;
    const Side mine = is_root ? root_side : other_side;
    Buffer buf(is_root ? "root's buffer" : "buffer", mine.bytes(), 3 + unsigned(s.rank) * 8);
    if (is_root) put_block(buf, 0, mine, root, -1);
    buf.part(is_root ? "the root's data" : "received data", 0, std::size_t(mine.count), mine.shape);
    buf.freeze();
    if (!is_root) expect_block(buf, 0, mine, root, -1);
    std::string what =
        "count=" + std::to_string(other_side.count) + " " + name(other_side.shape) + " root=" + std::to_string(root);
    if (root_side.shape != other_side.shape)
        what += " (root: " + std::to_string(root_side.count) + " " + name(root_side.shape) + ")";
    run_case(s, what, root_side.shape == Shape::ints && other_side.shape == Shape::ints ? "" : "holey", mine.ints() * 4,
             {&buf}, [&] { MPI_Bcast(buf.body(), mine.count, mpi_type(mine.shape), root, s.comm); });
}

void alltoall_case(const Setting& s, Side send_side, Side recv_side, bool in_place)
{
    const std::size_t P = std::size_t(s.size);
    Buffer recv("receive buffer", P * recv_side.bytes(), 2 + unsigned(s.rank) * 8);
    std::unique_ptr<Buffer> send;
    if (!in_place) send = std::make_unique<Buffer>("send buffer", P * send_side.bytes(), 1 + unsigned(s.rank) * 8);
    for (std::size_t to = 0; to < P; ++to) {
        if (in_place)
            put_block(recv, to * recv_side.bytes(), recv_side, s.rank, int(to));
        else {
            put_block(*send, to * send_side.bytes(), send_side, s.rank, int(to));
            send->part("block", to * send_side.bytes(), std::size_t(send_side.count), send_side.shape,
                       "for rank " + std::to_string(to));
        }
        recv.part("block", to * recv_side.bytes(), std::size_t(recv_side.count), recv_side.shape,
                  "from rank " + std::to_string(to));
    }
    recv.freeze();
    if (send) send->freeze();
    for (std::size_t from = 0; from < P; ++from)
        expect_block(recv, from * recv_side.bytes(), recv_side, int(from), s.rank);
    run_case(s, describe(send_side, recv_side, in_place), kind_of(send_side, recv_side, in_place), recv_side.ints() * 4,
             {send.get(), &recv}, [&] {
                 MPI_Alltoall(in_place ? MPI_IN_PLACE : send->body(), send_side.count, mpi_type(send_side.shape),
                              recv.body(), recv_side.count, mpi_type(recv_side.shape), s.comm);
             });
}

std::vector<int> roots_of(int size)
{
    std::vector<int> roots = {0};
    for (int root : {size - 1, size / 2})
        if (root != 0 && std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
    return roots;
}

} // namespace

void check_allgather(const Setting& s)
{
    for (int count : counts_for(s.size))
        for (bool in_place : {false, true}) gathered_case(s, -1, {count, Shape::ints}, {count, Shape::ints}, in_place);
    for (int k : {1, 37}) {
        gathered_case(s, -1, {2 * k, Shape::ints}, {k, Shape::vector}, false);
        gathered_case(s, -1, {k, Shape::padded}, {k, Shape::vector}, false);
        gathered_case(s, -1, {k, Shape::vector}, {k, Shape::padded}, false);
        gathered_case(s, -1, {k, Shape::vector}, {k, Shape::vector}, true);
    }
}

void check_gather(const Setting& s)
{
    for (int root : roots_of(s.size)) {
        for (int count : counts_for(s.size))
            for (bool in_place : {false, true})
                gathered_case(s, root, {count, Shape::ints}, {count, Shape::ints}, in_place);
        for (int k : {1, 37}) {
            gathered_case(s, root, {2 * k, Shape::ints}, {k, Shape::vector}, false);
            gathered_case(s, root, {k, Shape::padded}, {k, Shape::vector}, false);
            gathered_case(s, root, {k, Shape::vector}, {k, Shape::vector}, true);
        }
    }
}

void check_scatter(const Setting& s)
{
    for (int root : roots_of(s.size)) {
        for (int count : counts_for(s.size))
            for (bool in_place : {false, true})
                scattered_case(s, root, {count, Shape::ints}, {count, Shape::ints}, in_place);
        for (int k : {1, 37}) {
            scattered_case(s, root, {k, Shape::vector}, {2 * k, Shape::ints}, false);
            scattered_case(s, root, {k, Shape::padded}, {k, Shape::vector}, false);
            scattered_case(s, root, {k, Shape::vector}, {k, Shape::vector}, true);
        }
    }
}

// Irregular counts (some empty), displacements in order, reversed and shuffled, with gaps.
void rooted_v_cases(const Setting& s, bool gather)
{
    const std::size_t P = std::size_t(s.size);
    std::vector<int> in_order(P), reversed(P), small(P), large(P), zeros(P, 0);
    for (int r = 0; r < s.size; ++r) {
        in_order[std::size_t(r)] = r;
        reversed[std::size_t(r)] = s.size - 1 - r;
        small[std::size_t(r)] = r % 3 == 1 ? 0 : (r * 7 + 1) % 23 + 1;
        large[std::size_t(r)] = r % 3 == 1 ? 0 : 65539 / s.size + r * 3;
    }
    std::vector<int> shuffled = reversed;
    std::stable_partition(shuffled.begin(), shuffled.end(), [](int r) { return r % 2 == 1; });
    for (int root : roots_of(s.size))
        for (bool in_place : {false, true}) {
            rooted_v_case(s, gather, root, small, in_order, 0, Shape::ints, Shape::ints, in_place, "dense irregular");
            rooted_v_case(s, gather, root, large, shuffled, 5, Shape::ints, Shape::ints, in_place, "shuffled large with gaps");
            rooted_v_case(s, gather, root, zeros, shuffled, 3, Shape::ints, Shape::ints, in_place, "all empty, gaps");
            rooted_v_case(s, gather, root, small, reversed, 1, Shape::vector, Shape::vector, in_place, "reversed with gaps");
        }
    rooted_v_case(s, gather, 0, small, shuffled, 2, Shape::ints, Shape::vector, false, "shuffled with gaps");
    rooted_v_case(s, gather, s.size - 1, small, reversed, 1, Shape::padded, Shape::padded, false, "reversed with gaps");
}

void check_gatherv(const Setting& s) { rooted_v_cases(s, true); }

void alltoall_v_cases(const Setting& s, bool w)
{
    for (int scale : {1, 3, 1000})
        for (bool in_place : {false, true}) alltoall_v_case(s, w, Shape::ints, scale, in_place);
    for (bool in_place : {false, true}) {
        alltoall_v_case(s, w, Shape::vector, 2, in_place);
        alltoall_v_case(s, w, Shape::padded, 37, in_place);
    }
}
void check_alltoallv(const Setting& s) { alltoall_v_cases(s, false); }
void check_alltoallw(const Setting& s) { alltoall_v_cases(s, true); }
void check_scatterv(const Setting& s) { rooted_v_cases(s, false); }

void check_allgatherv(const Setting& s)
{
    const std::size_t P = std::size_t(s.size);
    std::vector<int> in_order(P), reversed(P), small(P), large(P), zeros(P, 0);
    for (int r = 0; r < s.size; ++r) {
        in_order[std::size_t(r)] = r;
        reversed[std::size_t(r)] = s.size - 1 - r;
        small[std::size_t(r)] = r % 3 == 1 ? 0 : (r * 7 + 1) % 23 + 1;
        large[std::size_t(r)] = r % 3 == 1 ? 0 : 65539 / s.size + r * 3;
    }
    // Reversed, then odd ranks before even ones: blocks out of rank order.
    std::vector<int> shuffled = reversed;
    std::stable_partition(shuffled.begin(), shuffled.end(), [](int r) { return r % 2 == 1; });
    for (bool in_place : {false, true}) {
        allgatherv_case(s, small, in_order, 0, Shape::ints, Shape::ints, in_place, "dense irregular");
        allgatherv_case(s, large, in_order, 0, Shape::ints, Shape::ints, in_place, "dense large irregular");
        allgatherv_case(s, zeros, shuffled, 3, Shape::ints, Shape::ints, in_place, "all empty, gaps");
        allgatherv_case(s, small, reversed, 3, Shape::ints, Shape::ints, in_place, "reversed with gaps");
        allgatherv_case(s, large, shuffled, 5, Shape::ints, Shape::ints, in_place, "shuffled large with gaps");
        allgatherv_case(s, small, shuffled, 1, Shape::vector, Shape::vector, in_place, "shuffled with gaps");
    }
    allgatherv_case(s, small, shuffled, 2, Shape::ints, Shape::vector, false, "shuffled with gaps");
    allgatherv_case(s, small, reversed, 1, Shape::padded, Shape::padded, false, "reversed with gaps");
}

void check_bcast(const Setting& s)
{
    for (int root : roots_of(s.size)) {
        for (int count : counts_for(s.size)) bcast_case(s, root, {count, Shape::ints}, {count, Shape::ints});
        for (int k : {1, 37}) {
            bcast_case(s, root, {2 * k, Shape::ints}, {k, Shape::vector});
            bcast_case(s, root, {k, Shape::padded}, {k, Shape::padded});
        }
    }
}

void check_alltoall(const Setting& s)
{
    for (int count : counts_for(s.size))
        for (bool in_place : {false, true}) alltoall_case(s, {count, Shape::ints}, {count, Shape::ints}, in_place);
    for (int k : {1, 37}) {
        alltoall_case(s, {2 * k, Shape::ints}, {k, Shape::vector}, false);
        alltoall_case(s, {k, Shape::padded}, {k, Shape::vector}, false);
        alltoall_case(s, {k, Shape::vector}, {k, Shape::vector}, true);
    }
}

void check_barrier(const Setting& s)
{
    run_case(s, "barrier", "", 0, {}, [&] { MPI_Barrier(s.comm); });
}

} // namespace exact

// nonblocking_check: MPI's semantics for loom's non-blocking and persistent collectives
// (coll_component/coll_loom_request*.c). collectives_check --form nonblocking|persistent checks
// every collective's results one call at a time; this checks what only overlapping calls show:
//   * many operations outstanding on one communicator (issued in the same order everywhere),
//     completed by MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test polling and MPI_Wait in
//     reverse order - each rank completing them in its own order;
//   * operations on several communicators at once, completed in opposite orders on even and
//     odd ranks;
//   * blocking collectives (which may use loom's shared segment) and point-to-point on the same
//     communicator while operations are outstanding;
//   * MPI_Request_free on a running operation (it completes in the background: loom's
//     counters say when, then its result is checked);
//   * persistent requests started many times, with new data each time, and MPI_Startall;
//   * with --threads N (MPI_THREAD_MULTIPLE): N threads, each on its own communicator;
//   * with --shm: shm forced for every collective (MPI_T), each communicator's segment made
//     by a blocking barrier first, so that every operation above runs on the shared segment
//     in turns (ShmTurns), interleaved with blocking shm calls on the same segment
//     and completed in a different order on each rank; loom must serve every iallreduce and
//     every start of a persistent allreduce;
//   * with --shm --segment-by-init: the same, but each communicator starts with a persistent
//     allreduce, with no blocking call before: its init (nonlocal) makes the request a segment
//     of its own (persistent requests never take turns on the communicator's, since ranks may
//     start them in any order: coll_loom_call.c), and the communicator's segment is then set
//     up by the first non-blocking call;
//   * with --shm --segment-by-nonblocking: the same, but nothing makes the segment before the
//     first non-blocking call on each communicator, which starts setting it up as an
//     operation of its own (coll_loom_request_start.c); the calls made meanwhile must run on it once
//     it is there (coll_loom_shm_segments_set_up counts the set-ups, and no call may run its
//     stand-in: coll_loom_shm_stand_ins);
//   * with --shm --segment-by-nonblocking --segments-refused (and coll_loom_shm_refuse 1 on
//     every rank): the same, but every set-up fails; the calls decided while it was under way
//     must run their stand-ins (on every rank alike, or the job hangs or gives wrong results),
//     and the calls after a blocking call see no segment (forced shm: handed on).
// Every result is checked against a reference computed here, and loom's MPI_T counters must
// show that loom served the calls (coll_loom_i<collective>_served, ..._init_served).
//
//   mpirun ... nonblocking_check [--threads N] [--rounds R]
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <mpi-ext.h>

#include "mpi_persistent.hpp"
#include "loom_mpi_t.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank = 0, size = 1;
bool shm = false;             // --shm
bool segment_by_init = false; // --segment-by-init
bool segment_by_nb = false;   // --segment-by-nonblocking
bool refused = false;         // --segments-refused
std::atomic<long> failures{0};
std::atomic<unsigned long long> iallreduce_calls{0};  // with a count above 0 (loom hands count 0 on)
std::atomic<unsigned long long> persistent_starts{0}; // of persistent allreduces

void fail(const std::string& what)
{
    if (failures++ < 20) std::fprintf(stderr, "nonblocking_check FAIL (rank %d): %s\n", rank, what.c_str());
}

int value(int r, int i, int salt) { return (r * 7 + i * 3 + salt * 5) % 101 - 50; }

// One operation: its buffers, the request, and how to check its result.
struct Op {
    std::string what;
    std::vector<int> send, recv;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<int> expected;
};

// Starts one of several collectives, chosen by k, with `n` ints and data salted by `salt`.
Op start(int k, int n, int salt, MPI_Comm comm)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    Op op;
    switch (k % 5) {
    case 0: { // iallreduce, sum
        op.what = "iallreduce of " + std::to_string(n);
        op.send.resize(std::size_t(n));
        op.recv.assign(std::size_t(n), -1);
        op.expected.assign(std::size_t(n), 0);
        for (int i = 0; i < n; ++i) {
            op.send[std::size_t(i)] = value(me, i, salt);
            for (int q = 0; q < p; ++q) op.expected[std::size_t(i)] += value(q, i, salt);
        }
        MPI_Iallreduce(op.send.data(), op.recv.data(), n, MPI_INT, MPI_SUM, comm, &op.request);
        if (n > 0) ++iallreduce_calls;
        break;
    }
    case 1: { // ibcast from a root that moves with the salt
        const int root = salt % p;
        op.what = "ibcast of " + std::to_string(n) + " from " + std::to_string(root);
        op.recv.assign(std::size_t(n), -1);
        op.expected.resize(std::size_t(n));
        for (int i = 0; i < n; ++i) op.expected[std::size_t(i)] = value(root, i, salt);
        if (me == root) op.recv = op.expected;
        MPI_Ibcast(op.recv.data(), n, MPI_INT, root, comm, &op.request);
        break;
    }
    case 2: { // iallgather
        op.what = "iallgather of " + std::to_string(n);
        op.send.resize(std::size_t(n));
        for (int i = 0; i < n; ++i) op.send[std::size_t(i)] = value(me, i, salt);
        op.recv.assign(std::size_t(n * p), -1);
        for (int q = 0; q < p; ++q)
            for (int i = 0; i < n; ++i) op.expected.push_back(value(q, i, salt));
        MPI_Iallgather(op.send.data(), n, MPI_INT, op.recv.data(), n, MPI_INT, comm, &op.request);
        break;
    }
    case 3: { // ireduce_scatter_block, max
        op.what = "ireduce_scatter_block of " + std::to_string(n);
        op.send.resize(std::size_t(n * p));
        for (int i = 0; i < n * p; ++i) op.send[std::size_t(i)] = value(me, i, salt);
        op.recv.assign(std::size_t(n), -1);
        for (int i = 0; i < n; ++i) {
            int m = value(0, me * n + i, salt);
            for (int q = 1; q < p; ++q) m = std::max(m, value(q, me * n + i, salt));
            op.expected.push_back(m);
        }
        MPI_Ireduce_scatter_block(op.send.data(), op.recv.data(), n, MPI_INT, MPI_MAX, comm, &op.request);
        break;
    }
    case 4: { // ialltoall
        op.what = "ialltoall of " + std::to_string(n);
        op.send.resize(std::size_t(n * p));
        for (int i = 0; i < n * p; ++i) op.send[std::size_t(i)] = value(me, i, salt);
        op.recv.assign(std::size_t(n * p), -1);
        for (int q = 0; q < p; ++q)
            for (int i = 0; i < n; ++i) op.expected.push_back(value(q, me * n + i, salt));
        MPI_Ialltoall(op.send.data(), n, MPI_INT, op.recv.data(), n, MPI_INT, comm, &op.request);
        break;
    }
    }
    return op;
}

void check(const Op& op, const std::string& how)
{
    if (op.recv != op.expected) {
        std::size_t i = 0;
        while (i < op.recv.size() && i < op.expected.size() && op.recv[i] == op.expected[i]) ++i;
        fail(op.what + " (" + how + "): first difference at element " + std::to_string(i));
    }
}

// A batch of `count` operations on comm, sizes from tiny to large, in the same order everywhere.
std::vector<Op> batch(int count, int salt, MPI_Comm comm)
{
    const int sizes[] = {1, 3, 100, 4097, 30000, 0};
    std::vector<Op> ops;
    ops.reserve(std::size_t(count));
    for (int k = 0; k < count; ++k) ops.push_back(start(k + salt, sizes[(k + salt) % 6], salt * 31 + k, comm));
    return ops;
}

std::vector<MPI_Request> requests(std::vector<Op>& ops)
{
    std::vector<MPI_Request> r;
    for (Op& op : ops) r.push_back(op.request);
    return r;
}

void many_outstanding(MPI_Comm comm, int round)
{
    // Waitall.
    auto ops = batch(12, round, comm);
    auto reqs = requests(ops);
    MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    for (const Op& op : ops) check(op, "MPI_Waitall");
    // Waitany.
    ops = batch(9, round + 1, comm);
    reqs = requests(ops);
    for (std::size_t done = 0; done < reqs.size(); ++done) {
        int index = MPI_UNDEFINED;
        MPI_Waitany(int(reqs.size()), reqs.data(), &index, MPI_STATUS_IGNORE);
        if (index == MPI_UNDEFINED) fail("MPI_Waitany found nothing to complete");
    }
    for (const Op& op : ops) check(op, "MPI_Waitany");
    // Waitsome.
    ops = batch(10, round + 2, comm);
    reqs = requests(ops);
    std::vector<int> indices(reqs.size());
    for (std::size_t done = 0; done < reqs.size();) {
        int outcount = 0;
        MPI_Waitsome(int(reqs.size()), reqs.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE);
        if (outcount == MPI_UNDEFINED) break;
        done += std::size_t(outcount);
    }
    for (const Op& op : ops) check(op, "MPI_Waitsome");
    // MPI_Test polling, odd ranks from the last operation, even ranks from the first.
    ops = batch(8, round + 3, comm);
    reqs = requests(ops);
    std::size_t left = reqs.size();
    for (long spins = 0; left > 0; ++spins) {
        for (std::size_t j = 0; j < reqs.size(); ++j) {
            const std::size_t i = rank % 2 ? reqs.size() - 1 - j : j;
            if (reqs[i] == MPI_REQUEST_NULL) continue;
            int flag = 0;
            MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
            if (flag) --left;
        }
        if (spins > 50000000) {
            fail("MPI_Test polling never completed the operations");
            return;
        }
    }
    for (const Op& op : ops) check(op, "MPI_Test polling");
    // MPI_Wait in reverse order of issue.
    ops = batch(7, round + 4, comm);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) MPI_Wait(&it->request, MPI_STATUS_IGNORE);
    for (const Op& op : ops) check(op, "MPI_Wait in reverse order");
}

void several_communicators(MPI_Comm a, MPI_Comm b, int round)
{
    auto on_a = batch(5, round, a);
    auto on_b = batch(5, round + 7, b);
    auto ra = requests(on_a), rb = requests(on_b);
    if (rank % 2) std::swap(ra, rb);
    MPI_Waitall(int(ra.size()), ra.data(), MPI_STATUSES_IGNORE);
    MPI_Waitall(int(rb.size()), rb.data(), MPI_STATUSES_IGNORE);
    for (const Op& op : on_a) check(op, "first communicator");
    for (const Op& op : on_b) check(op, "second communicator");
}

void mixed_with_blocking(MPI_Comm comm, int round)
{
    auto ops = batch(6, round, comm);
    // Blocking collectives (40 of them: past coll_loom_shm_min_calls, so the segment is used)
    // and a ring of point-to-point messages while the operations run.
    for (int i = 0; i < 40; ++i) {
        int in = rank + i, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
        if (out != size * (size - 1) / 2 + size * i) fail("blocking allreduce among non-blocking operations");
    }
    int me;
    MPI_Comm_rank(comm, &me);
    int token = me, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (me + 1) % size, 77, &got, 1, MPI_INT, (me + size - 1) % size, 77, comm,
                 MPI_STATUS_IGNORE);
    if (got != (me + size - 1) % size) fail("point-to-point among non-blocking operations");
    auto reqs = requests(ops);
    MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    for (const Op& op : ops) check(op, "mixed with blocking calls");
}

void freed_while_running(MPI_Comm comm, loom::tools::LoomCounters& iallreduce)
{
    const unsigned long long served0 = iallreduce.served();
    Op op = start(0, 20000, 9, comm);
    MPI_Request_free(&op.request);
    if (op.request != MPI_REQUEST_NULL) fail("MPI_Request_free left the handle set");
    // It ends in the background: progress until loom's counter says so.
    for (long spins = 0; iallreduce.served() == served0; ++spins) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, comm, &flag, MPI_STATUS_IGNORE);
        if (spins > 50000000) {
            fail("a freed operation never ended");
            return;
        }
    }
    check(op, "freed while running");
    MPI_Barrier(comm);
}

void persistent(MPI_Comm comm, int starts)
{
    int me = 0; // the rank in comm, which may differ from the world's (the bcast's root)
    MPI_Comm_rank(comm, &me);
    const int n = 1000;
    std::vector<int> send(n), recv(n), bcast_buf(n);
    MPI_Request r[2];
    PERSISTENT(Allreduce)(send.data(), recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &r[0]);
    PERSISTENT(Bcast)(bcast_buf.data(), n, MPI_INT, size - 1, comm, MPI_INFO_NULL, &r[1]);
    for (int s = 0; s < starts; ++s) {
        for (int i = 0; i < n; ++i) send[std::size_t(i)] = value(me, i, s);
        if (me == size - 1)
            for (int i = 0; i < n; ++i) bcast_buf[std::size_t(i)] = value(me, i, s + 1);
        std::fill(recv.begin(), recv.end(), -1);
        if (s % 2) {
            MPI_Startall(2, r);
        } else {
            MPI_Start(&r[0]);
            MPI_Start(&r[1]);
        }
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        ++persistent_starts;
        for (int i = 0; i < n; ++i) {
            int want = 0;
            for (int q = 0; q < size; ++q) want += value(q, i, s);
            if (recv[std::size_t(i)] != want) {
                fail("persistent allreduce, start " + std::to_string(s) + ": element " + std::to_string(i));
                break;
            }
            if (bcast_buf[std::size_t(i)] != value(size - 1, i, s + 1)) {
                fail("persistent bcast, start " + std::to_string(s) + ": element " + std::to_string(i));
                break;
            }
        }
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

// --shm: shm forced for every collective nonblocking_check calls; a blocking call then makes a
// communicator's segment at once (made_segment).
void force_shm()
{
    for (const char* c : {"allreduce", "bcast", "allgather", "reduce_scatter_block", "alltoall", "barrier"})
        if (!loom::tools::force_algorithm(c, "shm")) {
            std::fprintf(stderr, "nonblocking_check: cannot force shm for %s through MPI_T\n", c);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
}

// With --shm: the communicator's segment, made by a blocking barrier first; with
// --segment-by-init a persistent allreduce (on a segment of its own) comes first instead.
void made_segment(MPI_Comm comm)
{
    if (segment_by_nb) return;
    if (shm && segment_by_init)
        persistent(comm, 2);
    else if (shm)
        MPI_Barrier(comm);
}

void threads(int count, int rounds)
{
    std::vector<MPI_Comm> comms(static_cast<std::size_t>(count));
    for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
    std::vector<std::thread> pool;
    for (int t = 0; t < count; ++t)
        pool.emplace_back([&, t] {
            made_segment(comms[std::size_t(t)]);
            for (int round = 0; round < rounds; ++round) {
                auto ops = batch(6, round * 13 + t, comms[std::size_t(t)]);
                auto reqs = requests(ops);
                MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
                for (const Op& op : ops) check(op, "thread " + std::to_string(t));
            }
        });
    for (std::thread& th : pool) th.join();
    for (MPI_Comm& c : comms) MPI_Comm_free(&c);
}

} // namespace

int main(int argc, char** argv)
{
    int thread_count = 0, rounds = 3;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--shm") == 0) shm = true;
        if (std::strcmp(argv[i], "--segment-by-init") == 0) segment_by_init = true;
        if (std::strcmp(argv[i], "--segment-by-nonblocking") == 0) segment_by_nb = true;
        if (std::strcmp(argv[i], "--segments-refused") == 0) refused = true;
        if (i + 1 == argc) break;
        if (std::strcmp(argv[i], "--threads") == 0) thread_count = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, thread_count > 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (thread_count > 0 && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) std::printf("nonblocking_check: MPI_THREAD_MULTIPLE not provided; skipped\n");
        MPI_Finalize();
        return 77;
    }
    loom::tools::LoomCounters counters[3];
    const char* watched[3] = {"iallreduce", "ibcast", "allreduce_init"};
    for (int i = 0; i < 3; ++i)
        if (!counters[i].open(watched[i])) {
            std::fprintf(stderr, "nonblocking_check: loom's counters are missing: loom is not loaded\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    unsigned long long before[3];
    for (int i = 0; i < 3; ++i) before[i] = counters[i].served();
    loom::tools::LoomCounter segments_set_up, stand_ins_run;
    if (!segments_set_up.open("coll_loom_shm_segments_set_up") || !stand_ins_run.open("coll_loom_shm_stand_ins")) {
        std::fprintf(stderr, "nonblocking_check: loom's shm counters are missing\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (shm) force_shm();

    if (thread_count > 0) {
        threads(thread_count, rounds);
    } else {
        MPI_Comm a, b;
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &b); // all ranks, reversed
        made_segment(a);
        made_segment(b);
        for (int round = 0; round < rounds; ++round) {
            many_outstanding(a, round * 10);
            several_communicators(a, b, round * 10 + 5);
            mixed_with_blocking(b, round * 10 + 7);
        }
        freed_while_running(a, counters[0]);
        persistent(a, 8);
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }
    // loom must have served some of them (single-rank jobs: coll/self serves everything).
    unsigned long long served[3];
    for (int i = 0; i < 3; ++i) served[i] = counters[i].served() - before[i];
    if (size > 1 && served[0] + served[1] == 0)
        fail("loom served no iallreduce and no ibcast: the test proves nothing");
    if (size > 1 && thread_count == 0 && !refused && served[2] == 0)
        fail("loom served no start of a persistent allreduce");
    // On the segment loom serves every iallreduce of a count above 0 (shm serves every count
    // and op used here; the counter also counts Open MPI's own, made by MPI_Comm_dup and
    // MPI_Comm_split on MPI_COMM_WORLD, which has no segment, so at least).
    if (shm && size > 1 && !refused && served[0] < iallreduce_calls)
        fail("loom served " + std::to_string(served[0]) + " of " + std::to_string(iallreduce_calls.load()) +
             " iallreduce calls with shm forced and the segment made");
    if (shm && size > 1 && !refused && served[2] < persistent_starts)
        fail("loom served " + std::to_string(served[2]) + " of " + std::to_string(persistent_starts.load()) +
             " starts of persistent allreduces with shm forced" +
             (segment_by_init ? " (the first init makes the segment)" : " and the segment made"));

    // With --segment-by-nonblocking each communicator's segment was set up by an operation
    // (two communicators; a thread's own one each with --threads), and every call decided
    // meanwhile ran on it.
    const unsigned long long segments = segments_set_up.value(), stand_ins = stand_ins_run.value();
    const unsigned long long comms = thread_count > 0 ? unsigned(thread_count) : 2;
    if (refused) {
        if (segments != 0) fail(std::to_string(segments) + " shared segments set up with coll_loom_shm_refuse 1");
        if (size > 1 && stand_ins == 0) fail("no call ran its stand-in: the test proves nothing");
    } else {
        if (shm && size > 1 && segments < comms)
            fail(std::to_string(segments) + " shared segments set up for " + std::to_string(comms) + " communicators");
        if (stand_ins != 0) fail(std::to_string(stand_ins) + " calls ran their stand-in: a segment's set-up failed");
    }

    long mine = failures, all = 0;
    MPI_Reduce(&mine, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("nonblocking_check np=%d%s%s: loom served %llu iallreduce, %llu ibcast, %llu persistent allreduce "
                    "starts, %llu segments set up and %llu stand-ins on rank 0; %ld failures\n",
                    size, thread_count > 0 ? (" with " + std::to_string(thread_count) + " threads").c_str() : "",
                    shm ? (segment_by_init ? ", shm forced, segments made by inits"
                           : segment_by_nb ? (refused ? ", shm forced, segment set-ups by non-blocking calls refused"
                                                      : ", shm forced, segments made by non-blocking calls")
                                           : ", shm forced")
                        : "",
                    served[0], served[1], served[2], segments, stand_ins, all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
